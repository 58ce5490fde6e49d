#include "nn/cpu_kernels.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fgl::nn {
namespace {

constexpr char kBlasVariable[] = "OPENBLAS_CORETYPE";
constexpr char kBlasValue[] = "Haswell";
constexpr char kAtenVariable[] = "ATEN_CPU_CAPABILITY";
constexpr char kAtenValue[] = "avx2";
constexpr char kTunablesVariable[] = "GLIBC_TUNABLES";
constexpr char kHugePages[] = "glibc.malloc.hugetlb=1";

// Adds glibc's transparent-huge-page request to GLIBC_TUNABLES (kept beside any other tunable,
// and left alone when it already names hugetlb); true when it had to change it.
bool RequestHugePages() {
  const char* tunables = std::getenv(kTunablesVariable);
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.hugetlb") != nullptr) return false;
  std::string value = tunables != nullptr && *tunables != '\0' ? std::string(tunables) + ":" + kHugePages : kHugePages;
  setenv(kTunablesVariable, value.c_str(), 1);
  return true;
}

}  // namespace

void PinCpuKernels(char** argv) {
  // LibTorch reads its variable lazily, at the first dispatched op: setting it here suffices.
  if (std::getenv(kAtenVariable) == nullptr) setenv(kAtenVariable, kAtenValue, 1);
  // OpenBLAS and glibc read theirs when the process starts: a change needs a re-execution.
  bool reexecute = RequestHugePages();
  if (std::getenv(kBlasVariable) == nullptr) {
    setenv(kBlasVariable, kBlasValue, 1);
    reexecute = true;
  }
  if (!reexecute) return;
  execv("/proc/self/exe", argv);
  // Not reached unless exec failed: the run goes on with OpenBLAS's own kernel choice.
  std::fprintf(stderr,
               "warning: cannot re-execute with %s=%s and %s (%s); results may differ across CPUs\n",
               kBlasVariable, kBlasValue, kTunablesVariable, std::strerror(errno));
}

std::string CpuKernels() {
  const char* blas = std::getenv(kBlasVariable);
  const char* aten = std::getenv(kAtenVariable);
  return std::string(kBlasVariable) + "=" + (blas ? blas : "auto") + " " + kAtenVariable + "=" +
         (aten ? aten : "auto");
}

}  // namespace fgl::nn
