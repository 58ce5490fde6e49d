#include "nn/cpu_kernels.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fgl::nn {
namespace {

constexpr char kBlasVariable[] = "OPENBLAS_CORETYPE";
constexpr char kBlasValue[] = "Haswell";
constexpr char kAtenVariable[] = "ATEN_CPU_CAPABILITY";
constexpr char kAtenValue[] = "avx2";

}  // namespace

void PinCpuKernels(char** argv) {
  const bool blas_set = std::getenv(kBlasVariable) != nullptr;
  // LibTorch reads its variable lazily, at the first dispatched op: setting it here suffices.
  if (std::getenv(kAtenVariable) == nullptr) setenv(kAtenVariable, kAtenValue, 1);
  if (blas_set) return;
  setenv(kBlasVariable, kBlasValue, 1);
  execv("/proc/self/exe", argv);
  // Not reached unless exec failed: the run goes on with OpenBLAS's own kernel choice.
  std::fprintf(stderr, "warning: cannot re-execute with %s=%s (%s); results may differ across CPUs\n",
               kBlasVariable, kBlasValue, std::strerror(errno));
}

std::string CpuKernels() {
  const char* blas = std::getenv(kBlasVariable);
  const char* aten = std::getenv(kAtenVariable);
  return std::string(kBlasVariable) + "=" + (blas ? blas : "auto") + " " + kAtenVariable + "=" +
         (aten ? aten : "auto");
}

}  // namespace fgl::nn
