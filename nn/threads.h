// One knob for CPU threads: LibTorch's intra-op pool gets them; OpenBLAS's own pool is kept at one
// thread. Its workers spin in sched_yield after every multithreaded GEMM and take the core from
// LibTorch's workers: a two-thread GCN epoch took 5.2-7.7 ms on Cora and 70-85 ms on Physics
// against 2.4-2.6 and 53-64 ms with one; with OpenBLAS at one thread, 2.5-2.8 and 56-58 ms
// (nn/README.md). The dense GEMMs of these models are small (N x 64 by 64 x C).
#ifndef FGL_NN_THREADS_H_
#define FGL_NN_THREADS_H_

#include <cstdint>

namespace fgl::nn {

// Sets LibTorch's pool to `n` threads (n >= 1) and OpenBLAS's to one. Returns false if OpenBLAS
// is not the loaded BLAS (then only LibTorch's pool is set).
bool SetComputeThreads(int n);

// While alive, LibTorch ops started on this thread use one thread when the graph has fewer than
// kMinNodesForThreads nodes, else the pool's size. A Cora-sized epoch's element-wise ops are
// split into pieces too small to pay for the fork and join (two threads were 0.7-1.0x one on
// Cora, 1.1-1.5x on Coauthor-CS and Physics; nn/README.md). Our kernels (Spmm, dropout masks)
// give the same bits at any thread count; ATen's reductions above 32,768 elements do not, so
// runs that must repeat bit for bit (every table run) use one thread.
class GraphSizedThreads {
 public:
  static constexpr int64_t kMinNodesForThreads = 10000;
  explicit GraphSizedThreads(int64_t num_nodes);
  ~GraphSizedThreads();
  GraphSizedThreads(const GraphSizedThreads&) = delete;
  GraphSizedThreads& operator=(const GraphSizedThreads&) = delete;

 private:
  int previous_;
};

}  // namespace fgl::nn

#endif  // FGL_NN_THREADS_H_
