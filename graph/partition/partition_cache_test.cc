#include "graph/partition/partition_cache.h"

#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "graph/csbm.h"
#include "graph/partition/partitioner_registry.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PartitionCacheTest, KeyChangesWithEveryInput) {
  ASSERT_OK_AND_ASSIGN(Dataset d, MakeCsbm({}, 1));
  ASSERT_OK_AND_ASSIGN(Dataset other, MakeCsbm({}, 2));
  ASSERT_OK_AND_ASSIGN(auto louvain, MakePartitioner("louvain"));
  ASSERT_OK_AND_ASSIGN(auto louvain10, MakePartitioner("louvain:delta=10"));
  const uint64_t k = PartitionCacheKey(d, *louvain, 10, 2024);
  EXPECT_EQ(k, PartitionCacheKey(d, *louvain, 10, 2024));
  EXPECT_NE(k, PartitionCacheKey(d, *louvain, 10, 2025));
  EXPECT_NE(k, PartitionCacheKey(d, *louvain, 5, 2024));
  EXPECT_NE(k, PartitionCacheKey(d, *louvain10, 10, 2024));
  EXPECT_NE(k, PartitionCacheKey(other, *louvain, 10, 2024));
}

TEST(PartitionCacheTest, StoresReusesAndRecoversFromCorruption) {
  ASSERT_OK_AND_ASSIGN(Dataset d, MakeCsbm({}, 1));
  ASSERT_OK_AND_ASSIGN(auto louvain, MakePartitioner("louvain"));
  const std::string dir = std::string(::testing::TempDir()) + "/cache/partitions";
  bool hit = true;
  ASSERT_OK_AND_ASSIGN(Partition a, CachedPartition(*louvain, d, 10, 7, dir, &hit));
  EXPECT_FALSE(hit);
  ASSERT_OK_AND_ASSIGN(Partition b, CachedPartition(*louvain, d, 10, 7, dir, &hit));
  EXPECT_TRUE(hit);
  EXPECT_EQ(a.clients, b.clients);
  // A different seed is a different file, never the old one.
  ASSERT_OK_AND_ASSIGN(Partition c, CachedPartition(*louvain, d, 10, 8, dir, &hit));
  EXPECT_FALSE(hit);
  // Corrupt the stored file: it is detected, recomputed and rewritten.
  const std::string path =
      dir + "/" + PartitionCacheFileName(PartitionCacheKey(d, *louvain, 10, 7));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  ASSERT_OK_AND_ASSIGN(Partition e, CachedPartition(*louvain, d, 10, 7, dir, &hit));
  EXPECT_FALSE(hit);
  EXPECT_EQ(e.clients, a.clients);
}

TEST(PartitionCacheTest, DecodeRejectsBadBytes) {
  Partition p;
  p.clients = {{0, 1}, {2}};
  const std::string bytes = EncodePartition(p, 42);
  ASSERT_OK_AND_ASSIGN(Partition back, DecodePartition(bytes, 42, 3, "x"));
  EXPECT_EQ(back.clients, p.clients);
  EXPECT_THAT(DecodePartition(bytes, 43, 3, "x"), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("key")));
  EXPECT_THAT(DecodePartition(bytes.substr(0, bytes.size() - 3), 42, 3, "x"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum")));
  EXPECT_THAT(DecodePartition(bytes, 42, 2, "x"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("node 2 outside")));
  EXPECT_THAT(DecodePartition("garbage", 42, 3, "file.fglpart"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("file.fglpart")));
}

}  // namespace
}  // namespace fgl::graph
