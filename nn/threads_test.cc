#include "nn/threads.h"

#include <ATen/Parallel.h>

#include "gtest/gtest.h"

namespace fgl::nn {
namespace {

TEST(GraphSizedThreadsTest, SmallGraphsRunOnOneThreadAndTheScopeRestores) {
  SetComputeThreads(2);
  {
    const GraphSizedThreads scope(GraphSizedThreads::kMinNodesForThreads - 1);
    EXPECT_EQ(at::get_num_threads(), 1);
  }
  EXPECT_EQ(at::get_num_threads(), 2);
  {
    const GraphSizedThreads scope(GraphSizedThreads::kMinNodesForThreads);
    EXPECT_EQ(at::get_num_threads(), 2);
  }
  SetComputeThreads(1);
  {
    const GraphSizedThreads scope(5);
    EXPECT_EQ(at::get_num_threads(), 1);
  }
  EXPECT_EQ(at::get_num_threads(), 1);
}

}  // namespace
}  // namespace fgl::nn
