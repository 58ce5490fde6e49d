#include "nn/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <omp.h>

namespace fgl::nn {

bool SetComputeThreads(int n) {
  if (n < 1) n = 1;
  at::set_num_threads(n);
  // Looked up at run time: the BLAS behind LibTorch is chosen by Debian's alternatives.
  using SetThreads = void (*)(int);
  auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set == nullptr) return false;
  set(1);
  return true;
}

// omp_set_num_threads, not at::set_num_threads: the latter also resizes a pthreadpool (a lock and
// possibly new threads), and ATen's OpenMP backend reads this thread's OpenMP setting anyway.
GraphSizedThreads::GraphSizedThreads(int64_t num_nodes) : previous_(at::get_num_threads()) {
  if (num_nodes < kMinNodesForThreads && previous_ > 1) omp_set_num_threads(1);
}

GraphSizedThreads::~GraphSizedThreads() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

}  // namespace fgl::nn
