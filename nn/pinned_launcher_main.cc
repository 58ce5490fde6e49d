// The first half of a pinned binary (nn/pinned_binary.bzl): sets the pinned kernel environment
// (nn/cpu_kernels.h) and becomes NAME.bin beside it. Linking no LibTorch, it starts in about a
// millisecond, so the binary's ~340 shared libraries load once instead of twice (PinCpuKernels
// alone re-executes a process that has already loaded them).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include "nn/cpu_kernels.h"

int main(int argc, char** argv) {
  (void)argc;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    std::fprintf(stderr, "%s: cannot read /proc/self/exe: %s\n", argv[0], std::strerror(errno));
    return 127;
  }
  const std::string target = std::string(self, n) + ".bin";
  fgl::nn::SetPinnedEnvironment();
  fgl::nn::ExecPinned(target.c_str(), argv);
  std::fprintf(stderr, "%s: cannot execute %s (it is built beside this launcher; copy both): %s\n", argv[0],
               target.c_str(), std::strerror(errno));
  return 127;
}
