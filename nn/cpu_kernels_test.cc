#include "nn/cpu_kernels.h"

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

}  // namespace
}  // namespace fgl::nn
