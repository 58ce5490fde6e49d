#include "experiments/runner_environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "experiments/run_process.h"
#include "nn/cpu_kernels.h"

namespace fgl::experiments {

std::string Workspace() {
  const char* w = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (w && *w) return w;
  char buf[4096];
  return getcwd(buf, sizeof(buf)) ? buf : ".";
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  return absl::StrCat(getcwd(buf, sizeof(buf)) ? buf : ".", "/", path);
}

std::string DefaultCacheDir() {
  const char* c = std::getenv("FGL_CACHE_DIR");
  const char* home = std::getenv("HOME");
  return c && *c ? absl::StrCat(c, "/results") : absl::StrCat(home ? home : "/tmp", "/.cache/fgl/results");
}

std::string CodeCommit(const std::string& code_commit) {
  std::string commit = code_commit;
  if (commit.empty()) {
    commit = CommandOutput({"git", "-C", Workspace(), "rev-parse", "--short", "HEAD"});
    if (commit.empty()) commit = "unknown";
    if (!CommandOutput({"git", "-C", Workspace(), "status", "--porcelain", "--untracked-files=no"}).empty()) {
      commit += "+dirty";
    }
  }
  return commit;
}

std::string MachineDescription() {
  struct utsname u;
  uname(&u);
  // The CPU model too: the same kernels ran FedEgo's Cora runs 2-3x slower on one EPYC than on
  // another (nn/cpu_kernels.h), and the kernel release does not tell the hosts apart.
  const std::string cpu = nn::CpuModel();
  return absl::StrCat(u.machine, " ", std::thread::hardware_concurrency(), " cores", cpu.empty() ? "" : " (" + cpu + ")",
                      ", ", u.sysname, " ", u.release, ", ", nn::CpuKernels());
}

}  // namespace fgl::experiments
