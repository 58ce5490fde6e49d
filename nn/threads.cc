#include "nn/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

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

}  // namespace fgl::nn
