#include "nn/cpu_kernels.h"

#include <cstdlib>
#include <ctime>
#include <string>

#include "gtest/gtest.h"

namespace fgl::nn {
namespace {

TEST(CpuModelFromCpuinfo, NamesTheFirstCpuWithFamilyAndModel) {
  const std::string cpuinfo =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 1\n"
      "model name\t: AMD EPYC\nstepping\t: 2\n\n"
      "processor\t: 1\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: Other\n";
  EXPECT_EQ(CpuModelFromCpuinfo(cpuinfo), "AMD EPYC, family 23 model 1");
}

TEST(CpuModelFromCpuinfo, KeepsWhatIsThere) {
  EXPECT_EQ(CpuModelFromCpuinfo("model name : Some CPU\n"), "Some CPU");
  EXPECT_EQ(CpuModelFromCpuinfo("cpu family : 6\nmodel : 85\n"), "family 6 model 85");
  EXPECT_EQ(CpuModelFromCpuinfo(""), "");
  EXPECT_EQ(CpuModelFromCpuinfo("garbage without colons\n\n"), "");
}

TEST(SecondsSinceStart, SplitsAtTheReexecutionOnlyWhenItHappenedInThisProcess) {
  // Kernels pinned and huge pages asked for already: PinCpuKernels must not re-execute the test.
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1);
  const StartupSeconds plain = SecondsSinceStart();
  ASSERT_GE(plain.before_reexec, 0);
  EXPECT_LT(plain.before_reexec, 24 * 3600);
  EXPECT_EQ(plain.after_reexec, 0);

  // A re-execution time from before this process started was inherited: ignored, and removed.
  setenv("FGL_REEXECUTED_AT_NS", "1", 1);
  PinCpuKernels(nullptr);
  EXPECT_EQ(std::getenv("FGL_REEXECUTED_AT_NS"), nullptr);
  EXPECT_EQ(SecondsSinceStart().after_reexec, 0);

  // One between the start and now splits the time there.
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  const double now_s = static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
  const StartupSeconds before = SecondsSinceStart();
  if (before.before_reexec < 0.05) GTEST_SKIP() << "the process is too young to place a time inside it";
  const double at = now_s - before.before_reexec / 2;
  setenv("FGL_REEXECUTED_AT_NS", std::to_string(static_cast<long long>(at * 1e9)).c_str(), 1);
  PinCpuKernels(nullptr);
  const StartupSeconds split = SecondsSinceStart();
  // The start is known to a clock tick (10 ms); `at` was placed halfway.
  EXPECT_NEAR(split.before_reexec, before.before_reexec / 2, 0.02);
  EXPECT_GE(split.after_reexec, before.before_reexec / 2);
}

}  // namespace
}  // namespace fgl::nn
