#include "nn/cpu_kernels.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
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
// Set just before the re-execution: CLOCK_BOOTTIME then, in nanoseconds.
constexpr char kReexecutedAtVariable[] = "FGL_REEXECUTED_AT_NS";

// CLOCK_BOOTTIME in seconds: the clock /proc/<pid>/stat's start time counts on.
double BootSeconds() {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// When this process re-executed itself (boot seconds), taken from the environment by
// PinCpuKernels in the pinned process; -1: it did not.
double reexecuted_at = -1;

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

bool SetPinnedEnvironment() {
  // Read once and removed, so that the processes this one starts do not inherit it.
  if (const char* at = std::getenv(kReexecutedAtVariable); at != nullptr) {
    reexecuted_at = 1e-9 * std::strtod(at, nullptr);
    unsetenv(kReexecutedAtVariable);
  }
  // LibTorch reads its variable lazily, at the first dispatched op: setting it here suffices.
  if (std::getenv(kAtenVariable) == nullptr) setenv(kAtenVariable, kAtenValue, 1);
  // OpenBLAS and glibc read theirs when the process starts: a change needs a re-execution.
  bool reexecute = RequestHugePages();
  if (std::getenv(kBlasVariable) == nullptr) {
    setenv(kBlasVariable, kBlasValue, 1);
    reexecute = true;
  }
  return reexecute;
}

void ExecPinned(const char* path, char** argv) {
  setenv(kReexecutedAtVariable, std::to_string(static_cast<int64_t>(BootSeconds() * 1e9)).c_str(), 1);
  execv(path, argv);
  const int error = errno;
  unsetenv(kReexecutedAtVariable);
  errno = error;
}

void PinCpuKernels(char** argv) {
  if (!SetPinnedEnvironment()) return;
  ExecPinned("/proc/self/exe", argv);
  // Not reached unless exec failed: the run goes on with OpenBLAS's own kernel choice.
  std::fprintf(stderr,
               "warning: cannot re-execute with %s=%s and %s (%s); results may differ across CPUs\n",
               kBlasVariable, kBlasValue, kTunablesVariable, std::strerror(errno));
}

StartupSeconds SecondsSinceStart() {
  std::ifstream file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces: fields are counted after
  // its closing one, where field 3 begins; the start time is field 22.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  int number = 2;
  while (number < 22 && fields >> field) ++number;
  if (number != 22) return {};
  char* end = nullptr;
  const double ticks = std::strtod(field.c_str(), &end);
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (field.empty() || *end != '\0' || ticks_per_second <= 0) return {};
  const double started = ticks / static_cast<double>(ticks_per_second);
  const double now = BootSeconds();
  // A time before this process started was inherited from a parent: not this process's.
  if (reexecuted_at < started || reexecuted_at > now) return {now - started, 0};
  return {reexecuted_at - started, now - reexecuted_at};
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
