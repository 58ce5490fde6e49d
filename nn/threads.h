// One knob for CPU threads: LibTorch's intra-op pool and OpenBLAS's own pool. Left alone, OpenBLAS
// starts a thread per core that spins in sched_yield between the small GEMMs of a GNN epoch
// (measured: ~40% of a Cora GCN epoch's CPU time when another process shares the cores).
#ifndef FGL_NN_THREADS_H_
#define FGL_NN_THREADS_H_

namespace fgl::nn {

// Sets both pools to `n` threads (n >= 1). Returns false if OpenBLAS is not the loaded BLAS
// (then only LibTorch's pool is set).
bool SetComputeThreads(int n);

}  // namespace fgl::nn

#endif  // FGL_NN_THREADS_H_
