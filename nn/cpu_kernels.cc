#include "nn/cpu_kernels.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
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

std::string CpuModelFromCpuinfo(const std::string& cpuinfo) {
  auto trim = [](std::string s) {
    const size_t first = s.find_first_not_of(" \t");
    if (first == std::string::npos) return std::string();
    return s.substr(first, s.find_last_not_of(" \t") - first + 1);
  };
  std::string name, family, model;
  std::istringstream lines(cpuinfo);
  for (std::string line; std::getline(lines, line);) {
    if (trim(line).empty()) {
      if (!name.empty() || !family.empty()) break;  // the first CPU's block has ended
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && name.empty()) name = value;
    if (key == "cpu family" && family.empty()) family = value;
    if (key == "model" && model.empty()) model = value;
  }
  if (family.empty()) return name;
  return name + (name.empty() ? "" : ", ") + "family " + family + (model.empty() ? "" : " model " + model);
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return CpuModelFromCpuinfo(text.str());
}

}  // namespace fgl::nn
