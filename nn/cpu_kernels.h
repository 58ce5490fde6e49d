// The same floating-point kernels on every x86-64 machine, so that a seed fixes a run's numbers
// across machines and not only across thread counts.
#ifndef FGL_NN_CPU_KERNELS_H_
#define FGL_NN_CPU_KERNELS_H_

#include <string>

namespace fgl::nn {

// OpenBLAS picks its GEMM kernels by CPU model and LibTorch its vectorised ops by CPU
// capability, and both change results: FedTAD Cora-5, seed 2024 ends at 82.64 with OpenBLAS's
// own choice on an AMD EPYC, 82.91 with OPENBLAS_CORETYPE=Haswell and 82.56 with SkylakeX
// (FedAvg is unaffected). This pins OPENBLAS_CORETYPE=Haswell and ATEN_CPU_CAPABILITY=avx2 (any
// x86-64 CPU with AVX2) unless the environment already sets them, by re-executing the binary
// with them set: OpenBLAS reads its variable when it is loaded, before main. Call first thing in
// main; returns only in the pinned process (or when re-executing failed, with a warning).
// The same re-execution asks glibc to back its large (mmap'd) blocks with transparent huge pages
// (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, unless the environment names hugetlb): numbers are
// unchanged, but this VM's page faults no longer dominate runs that allocate big tensors afresh
// (FedSage+ Cora-10, 3 generator rounds: 69 + 55 CPU-s -> 17 + 11, 5.9 M faults -> 0.2 M).
void PinCpuKernels(char** argv);

// PinCpuKernels in two steps, for a launcher that becomes another binary (nn/pinned_binary.bzl):
// sets the pinned variables (those the environment already sets are left alone) and returns
// whether they changed something only a new process picks up; ExecPinned replaces this process
// with `path` (argv as given), noting when for SecondsSinceStart, and returns only if exec failed
// (errno says why).
bool SetPinnedEnvironment();
void ExecPinned(const char* path, char** argv);

// Seconds from this process's start (the kernel's record of its first exec) to now, split at the
// re-execution PinCpuKernels did: `before_reexec` is loading the binary and its ~340 shared
// libraries once plus everything up to the exec, `after_reexec` loading them again (0: no
// re-execution). Resolution: the kernel's clock tick (10 ms); both -1 when /proc cannot be read.
struct StartupSeconds {
  double before_reexec = -1;
  double after_reexec = -1;
};
StartupSeconds SecondsSinceStart();

// "OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2": what this process runs with.
std::string CpuKernels();

// "AMD EPYC, family 23 model 1": the first CPU of /proc/cpuinfo's text (its model name, and its
// family and model numbers, which a VM that masks the name still passes through), or "" when the
// text has none. The same kernels run at different speeds on different CPUs: single-thread
// Haswell sgemm did 36 GFLOP/s on a family-23 model-1 EPYC (Zen, 128-bit FMA units) and 55-65 on
// the EPYCs of earlier sessions, so a record's wall time is read against the CPU it names.
std::string CpuModelFromCpuinfo(const std::string& cpuinfo);
// CpuModelFromCpuinfo of this machine's /proc/cpuinfo ("" where it cannot be read).
std::string CpuModel();

}  // namespace fgl::nn

#endif  // FGL_NN_CPU_KERNELS_H_
