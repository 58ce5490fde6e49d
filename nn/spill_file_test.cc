// SpillFile: tensors of several dtypes and shapes come back bit for bit, in order; a missing
// directory or a non-CPU tensor is an error naming it.
#include "nn/spill_file.h"

#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::nn {
namespace {

TEST(SpillFileTest, ReadsBackWhatItWroteBitForBit) {
  torch::manual_seed(3);
  const std::vector<torch::Tensor> written = {
      torch::randn({37, 5}), torch::randint(0, 1000, {11}, torch::kInt64), torch::randn({4, 6}).t(),  // not contiguous
      torch::empty({0}), torch::randn({2, 3, 4}, torch::kDouble)};
  ASSERT_OK_AND_ASSIGN(SpillFile file, SpillFile::Write(::testing::TempDir(), written));
  SpillFile moved = std::move(file);  // the file travels with the object
  for (int pass = 0; pass < 2; ++pass) {  // a file can be read more than once
    ASSERT_OK_AND_ASSIGN(std::vector<torch::Tensor> read, moved.Read());
    ASSERT_EQ(read.size(), written.size());
    for (size_t i = 0; i < read.size(); ++i) {
      EXPECT_EQ(read[i].sizes(), written[i].sizes()) << i;
      EXPECT_EQ(read[i].dtype(), written[i].dtype()) << i;
      EXPECT_TRUE(read[i].is_contiguous()) << i;
      EXPECT_TRUE(torch::equal(read[i], written[i])) << i;
    }
  }
}

TEST(SpillFileTest, AMissingDirectoryIsNamed) {
  EXPECT_THAT(SpillFile::Write("/nonexistent-fgl-dir", {torch::ones({3})}).status(),
              ::fgl::testing::StatusIs(absl::StatusCode::kUnavailable, ::testing::HasSubstr("/nonexistent-fgl-dir")));
}

}  // namespace
}  // namespace fgl::nn
