#include "third_party/community_detection.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::third_party {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

// Two 4-cliques {0,1,2,3} and {4,5,6,7} joined by the single edge 3-4.
void TwoCliques(std::vector<int64_t>& src, std::vector<int64_t>& dst) {
  for (int base : {0, 4})
    for (int i = 0; i < 4; ++i)
      for (int j = i + 1; j < 4; ++j) src.push_back(base + i), dst.push_back(base + j);
  src.push_back(3);
  dst.push_back(4);
}

TEST(LouvainCommunitiesTest, SeparatesTwoCliques) {
  std::vector<int64_t> src, dst;
  TwoCliques(src, dst);
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> c, LouvainCommunities(8, src, dst, 1.0, 7));
  for (int v = 1; v < 4; ++v) EXPECT_EQ(c[v], c[0]);
  for (int v = 5; v < 8; ++v) EXPECT_EQ(c[v], c[4]);
  EXPECT_NE(c[0], c[4]);
}

TEST(LouvainCommunitiesTest, RejectsOutOfRangeEdge) {
  std::vector<int64_t> src = {0, 1}, dst = {1, 9};
  EXPECT_THAT(LouvainCommunities(3, src, dst, 1.0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("edge 1 (1, 9)")));
}

TEST(MetisPartsTest, SeparatesTwoCliquesAndIsSeeded) {
  std::vector<int64_t> src, dst;
  TwoCliques(src, dst);
  std::vector<std::vector<int64_t>> adj(8);
  for (size_t i = 0; i < src.size(); ++i) adj[src[i]].push_back(dst[i]), adj[dst[i]].push_back(src[i]);
  std::vector<int64_t> row_ptr = {0}, col;
  for (auto& a : adj) {
    col.insert(col.end(), a.begin(), a.end());
    row_ptr.push_back(col.size());
  }
  for (bool recursive : {false, true}) {
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> p, MetisParts(row_ptr, col, 2, recursive, 3));
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> q, MetisParts(row_ptr, col, 2, recursive, 3));
    EXPECT_EQ(p, q);
    for (int v = 1; v < 4; ++v) EXPECT_EQ(p[v], p[0]);
    for (int v = 5; v < 8; ++v) EXPECT_EQ(p[v], p[4]);
    EXPECT_NE(p[0], p[4]);
  }
}

TEST(MetisPartsTest, RejectsInconsistentCsr) {
  std::vector<int64_t> row_ptr = {0, 1, 5}, col = {1, 0};
  EXPECT_THAT(MetisParts(row_ptr, col, 2, false, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("row_ptr.back()")));
}

}  // namespace
}  // namespace fgl::third_party
