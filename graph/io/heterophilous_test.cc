#include "graph/io/heterophilous.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/io/npy.h"
#include "graph/io/npz_writer.h"
#include "graph/testing/tensor_values.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::NpyBytes;
using testing::NpyFromValues;
using testing::NpzMember;

using ::fgl::graph::testing::Vec;

// 4 nodes, edges (0,1) (1,0) (2,2) (1,2) (0,1): a reverse duplicate, a repeat and a self-loop
// -> undirected 0-1, 1-2: row_ptr [0, 1, 3, 4, 4], col [1, 0, 2, 1].
// Two splits stored Fortran-ordered, as numpy saved most of the real files:
//   train = [[1,1,0,0], [0,0,1,1]] is stored column-major: 1 0 1 0 0 1 0 1.
std::map<std::string, std::string> TinyMembers() {
  return {
      {"node_features", NpyFromValues<float>({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})},
      {"node_labels", NpyFromValues<int64_t>({4}, {1, 0, 1, 0})},
      {"edges", NpyFromValues<int64_t>({5, 2}, {0, 1, 1, 0, 2, 2, 1, 2, 0, 1})},
      {"train_masks", NpyBytes("|b1", {2, 4}, std::string("\1\0\1\0\0\1\0\1", 8), true)},
      {"val_masks", NpyFromValues<bool>({2, 4}, {0, 0, 1, 0, 1, 0, 0, 0})},
      {"test_masks", NpyFromValues<uint8_t>({2, 4}, {0, 0, 0, 1, 0, 1, 0, 0})},
  };
}

std::string WriteNpz(const std::string& file, const std::map<std::string, std::string>& members) {
  std::vector<NpzMember> list;
  for (const auto& [key, bytes] : members) list.push_back({key + ".npy", bytes});
  const std::string path = std::string(::testing::TempDir()) + "/" + file;
  auto zip = testing::NpzBytes(list, /*deflate=*/true);
  EXPECT_OK(zip);
  EXPECT_OK(testing::WriteBytes(path, *zip));
  return path;
}

TEST(LoadHeterophilousNpzTest, LoadsTinyFile) {
  ASSERT_OK_AND_ASSIGN(Dataset d,
                       LoadHeterophilousNpz(WriteNpz("tiny.npz", TinyMembers()), "tiny"));
  EXPECT_THAT(Vec<int64_t>(d.graph.row_ptr()), ElementsAre(0, 1, 3, 4, 4));
  EXPECT_THAT(Vec<int64_t>(d.graph.col()), ElementsAre(1, 0, 2, 1));
  EXPECT_THAT(Vec<float>(d.features), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(Vec<int64_t>(d.labels), ElementsAre(1, 0, 1, 0));
  EXPECT_EQ(d.num_classes, 2);
  ASSERT_EQ(d.provided_splits.size(), 2u);
  EXPECT_THAT(Vec<bool>(d.provided_splits[0].train), ElementsAre(1, 1, 0, 0));
  EXPECT_THAT(Vec<bool>(d.provided_splits[1].train), ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(Vec<bool>(d.provided_splits[0].val), ElementsAre(0, 0, 1, 0));
  EXPECT_THAT(Vec<bool>(d.provided_splits[1].test), ElementsAre(0, 1, 0, 0));
}

TEST(LoadHeterophilousNpzTest, RejectsBadMembers) {
  struct Case {
    std::string key, bytes, message;
  };
  const std::vector<Case> cases = {
      {"edges", NpyFromValues<int64_t>({2, 2}, {0, 1, 1, 4}),
       "bad.npz:edges.npy: edge 1 (1, 4) has a node outside [0, 4)"},
      {"edges", NpyFromValues<int64_t>({2, 3}, {0, 1, 1, 1, 2, 3}),
       "bad.npz:edges.npy: shape (2, 3), expected [E, 2]"},
      {"edges", NpyFromValues<float>({1, 2}, {0, 1}), "bad.npz:edges.npy: expected an integer"},
      {"node_features", NpyFromValues<float>({3, 2}, {0, 1, 2, 3, 4, 5}),
       "bad.npz:node_features.npy: shape (3, 2), expected [4, D]"},
      {"node_features", NpyFromValues<int64_t>({4, 1}, {0, 1, 2, 3}),
       "bad.npz:node_features.npy: expected <f4 or <f8, got <i8"},
      {"node_labels", NpyFromValues<int64_t>({4}, {0, 1, 70000, 0}), "labels span [0, 70000]"},
      {"train_masks", NpyFromValues<bool>({2, 3}, {0, 0, 0, 0, 0, 0}),
       "bad.npz:train_masks.npy: shape (2, 3), expected [K, 4]"},
      {"test_masks", NpyFromValues<uint8_t>({2, 4}, {0, 0, 0, 2, 0, 0, 0, 0}),
       "bad.npz:test_masks.npy: a mask must hold only 0 and 1; element 3 is 2"},
      {"val_masks", NpyFromValues<bool>({1, 4}, {0, 0, 0, 0}), "2 train, 1 val and 2 test masks"},
  };
  for (const Case& c : cases) {
    auto m = TinyMembers();
    m[c.key] = c.bytes;
    EXPECT_THAT(LoadHeterophilousNpz(WriteNpz("bad.npz", m), "bad"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.key;
  }
  auto m = TinyMembers();
  m.erase("edges");
  EXPECT_THAT(LoadHeterophilousNpz(WriteNpz("bad.npz", m), "bad"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("bad.npz: no member 'edges.npy'")));
  EXPECT_THAT(LoadHeterophilousNpz("/nonexistent/squirrel.npz", "squirrel"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("download_datasets.sh squirrel")));
}

// ---- real files, when $FGL_DATA_DIR is set ----

struct Expected {
  std::string dir, file;
  int64_t nodes, edges, features, classes;
  std::vector<int64_t> label_counts;  // empty: not checked
  std::vector<int64_t> split0_sizes;  // train/val/test of split 0; empty: not checked
};

// What the stored edge list holds before cleaning, to explain any difference in counts.
struct RawEdgeStats {
  int64_t rows = 0, self_loops = 0, repeated_pairs = 0;  // repeated: same unordered pair again
};

RawEdgeStats CountRawEdges(const std::string& path) {
  RawEdgeStats s;
  auto npz = NpzArchive::Open(path);
  if (!npz.ok()) return s;
  auto edges = npz->ReadArray("edges");
  if (!edges.ok()) return s;
  absl::Span<const int64_t> e = edges->values<int64_t>();
  std::set<std::pair<int64_t, int64_t>> seen;
  s.rows = edges->shape[0];
  for (int64_t i = 0; i < s.rows; ++i) {
    const int64_t u = e[2 * i], v = e[2 * i + 1];
    if (u == v) ++s.self_loops;
    if (!seen.insert({std::min(u, v), std::max(u, v)}).second) ++s.repeated_pairs;
  }
  return s;
}

class RealHeterophilousTest : public ::testing::TestWithParam<Expected> {};

TEST_P(RealHeterophilousTest, MatchesReadmeTable) {
  const char* root = std::getenv("FGL_DATA_DIR");
  if (root == nullptr || *root == '\0') GTEST_SKIP() << "FGL_DATA_DIR is not set";
  const Expected& e = GetParam();
  const std::string path = std::string(root) + "/" + e.dir + "/" + e.file;
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadHeterophilousNpz(path, e.dir));
  const RawEdgeStats raw = CountRawEdges(path);
  const std::vector<int64_t> counts = LabelCounts(d);
  std::cout << e.file << ": " << d.num_nodes() << " nodes, " << d.graph.num_undirected_edges()
            << " edges (raw rows " << raw.rows << ", self-loops " << raw.self_loops
            << ", repeated pairs " << raw.repeated_pairs << "), " << d.num_features()
            << " features, " << d.num_classes << " classes, labels [";
  for (size_t c = 0; c < counts.size(); ++c) std::cout << (c ? "," : "") << counts[c];
  std::cout << "], splits " << d.provided_splits.size();
  if (!d.provided_splits.empty()) {
    const NodeSplit& s = d.provided_splits[0];
    std::cout << " (split 0: " << s.train.sum().item<int64_t>() << "/"
              << s.val.sum().item<int64_t>() << "/" << s.test.sum().item<int64_t>() << ")";
  }
  std::cout << "\n";
  EXPECT_EQ(d.num_nodes(), e.nodes);
  EXPECT_EQ(d.graph.num_undirected_edges(), e.edges);
  EXPECT_EQ(d.num_features(), e.features);
  EXPECT_EQ(d.num_classes, e.classes);
  EXPECT_TRUE(d.graph.IsSymmetric());
  EXPECT_EQ(d.graph.CountSelfLoops(), 0);
  EXPECT_EQ(d.provided_splits.size(), 10u);
  if (!e.label_counts.empty()) {
    EXPECT_THAT(counts, ElementsAreArray(e.label_counts));
  }
  if (!e.split0_sizes.empty() && !d.provided_splits.empty()) {
    const NodeSplit& s = d.provided_splits[0];
    EXPECT_THAT(std::vector<int64_t>({s.train.sum().item<int64_t>(), s.val.sum().item<int64_t>(),
                                      s.test.sum().item<int64_t>()}),
                ElementsAreArray(e.split0_sizes));
  }
  for (const NodeSplit& s : d.provided_splits) {  // masks never overlap
    EXPECT_EQ((s.train & s.val).sum().item<int64_t>(), 0);
    EXPECT_EQ((s.train & s.test).sum().item<int64_t>(), 0);
    EXPECT_EQ((s.val & s.test).sum().item<int64_t>(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, RealHeterophilousTest,
    ::testing::Values(
        Expected{"chameleon", "chameleon.npz", 2277, 31371, 2325, 5, {}, {1092, 729, 456}},
        Expected{"squirrel", "squirrel.npz", 5201, 198353, 2089, 5, {}, {2496, 1664, 1041}},
        Expected{"chameleon", "chameleon_filtered.npz", 890, 8854, 2325, 5, {}, {}},
        Expected{"squirrel", "squirrel_filtered.npz", 2223, 46998, 2089, 5, {}, {}},
        Expected{"actor",
                 "actor.npz",
                 7600,
                 26659,
                 932,
                 5,
                 {853, 1337, 1630, 1815, 1965},
                 {3648, 2432, 1520}},
        Expected{"texas", "texas.npz", 183, 279, 1703, 5, {33, 1, 18, 101, 30}, {87, 59, 37}},
        Expected{"cornell", "cornell.npz", 183, 277, 1703, 5, {38, 16, 30, 82, 17}, {87, 59, 37}},
        Expected{
            "wisconsin", "wisconsin.npz", 251, 450, 1703, 5, {10, 70, 118, 32, 21}, {120, 80, 51}},
        Expected{"minesweeper", "minesweeper.npz", 10000, 39402, 7, 2, {}, {}},
        Expected{"tolokers", "tolokers.npz", 11758, 519000, 10, 2, {}, {}}),
    [](const auto& info) {
      std::string file = info.param.file;
      return file.substr(0, file.find('.'));
    });

}  // namespace
}  // namespace fgl::graph::io
