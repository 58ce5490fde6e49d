#include "graph/io/gnn_benchmark.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
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
using ::testing::HasSubstr;
using testing::NpyBytes;
using testing::NpyFromValues;
using testing::NpzMember;

using ::fgl::graph::testing::Vec;

// A 4-node file shaped like the real ones, with the quirks they may have:
//   stored adjacency (not symmetric, one duplicate, one self-loop, node 3 isolated)
//     row 0: [1]   row 1: [2, 2]   row 2: [2]   row 3: []
//   -> undirected edges 0-1, 1-2: row_ptr [0, 1, 3, 4, 4], col [1, 0, 2, 1].
//   attr (4 x 3): row 0: {2: 1}, row 1: {0: 1, 0: 2} (duplicates add), row 2: {}, row 3: {1: 5}
//   -> [[0, 0, 1], [3, 0, 0], [0, 0, 0], [0, 5, 0]].
//   labels [0, 2, 1, 2] -> 3 classes. class_names is a pickled object array, never read.
std::map<std::string, std::string> TinyMembers() {
  return {
      {"adj_data", NpyFromValues<float>({4}, {1, 1, 1, 1})},
      {"adj_indices", NpyFromValues<int32_t>({4}, {1, 2, 2, 2})},
      {"adj_indptr", NpyFromValues<int32_t>({5}, {0, 1, 3, 4, 4})},
      {"adj_shape", NpyFromValues<int64_t>({2}, {4, 4})},
      {"attr_data", NpyFromValues<float>({4}, {1, 1, 2, 5})},
      {"attr_indices", NpyFromValues<int32_t>({4}, {2, 0, 0, 1})},
      {"attr_indptr", NpyFromValues<int32_t>({5}, {0, 1, 3, 3, 4})},
      {"attr_shape", NpyFromValues<int64_t>({2}, {4, 3})},
      {"labels", NpyFromValues<int64_t>({4}, {0, 2, 1, 2})},
      {"class_names", NpyBytes("|O", {3}, "\x80\x02pickle")},
  };
}

std::string WriteNpz(const std::string& file, const std::map<std::string, std::string>& members,
                     bool deflate = false) {
  std::vector<NpzMember> list;
  for (const auto& [key, bytes] : members) list.push_back({key + ".npy", bytes});
  const std::string path = std::string(::testing::TempDir()) + "/" + file;
  auto zip = testing::NpzBytes(list, deflate);
  EXPECT_OK(zip);
  EXPECT_OK(testing::WriteBytes(path, *zip));
  return path;
}

TEST(LoadGnnBenchmarkNpzTest, BuildsSymmetricGraphDenseFeaturesAndLabels) {
  for (bool deflate : {false, true}) {
    const std::string path = WriteNpz("tiny.npz", TinyMembers(), deflate);
    ASSERT_OK_AND_ASSIGN(Dataset d, LoadGnnBenchmarkNpz(path, "tiny"));
    EXPECT_EQ(d.name, "tiny");
    EXPECT_THAT(Vec<int64_t>(d.graph.row_ptr()), ElementsAre(0, 1, 3, 4, 4));
    EXPECT_THAT(Vec<int64_t>(d.graph.col()), ElementsAre(1, 0, 2, 1));
    EXPECT_THAT(d.features.sizes().vec(), ElementsAre(4, 3));
    EXPECT_THAT(Vec<float>(d.features), ElementsAre(0, 0, 1, 3, 0, 0, 0, 0, 0, 0, 5, 0));
    EXPECT_THAT(Vec<int64_t>(d.labels), ElementsAre(0, 2, 1, 2));
    EXPECT_EQ(d.num_classes, 3);
    EXPECT_TRUE(d.provided_splits.empty());
  }
}

TEST(LoadGnnBenchmarkNpzTest, AcceptsInt64IndicesAndFloat64Data) {
  auto m = TinyMembers();
  m["attr_indices"] = NpyFromValues<int64_t>({4}, {2, 0, 0, 1});
  m["attr_indptr"] = NpyFromValues<int64_t>({5}, {0, 1, 3, 3, 4});
  m["attr_data"] = NpyFromValues<double>({4}, {1, 1, 2, 5});
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadGnnBenchmarkNpz(WriteNpz("wide.npz", m), "wide"));
  EXPECT_THAT(Vec<float>(d.features), ElementsAre(0, 0, 1, 3, 0, 0, 0, 0, 0, 0, 5, 0));
}

TEST(LoadGnnBenchmarkNpzTest, RejectsInconsistentMembers) {
  struct Case {
    std::string key, bytes, message;
    absl::StatusCode code = absl::StatusCode::kInvalidArgument;
  };
  const std::vector<Case> cases = {
      {"adj_indptr", NpyFromValues<int32_t>({5}, {0, 3, 1, 4, 4}),
       "bad.npz:adj_indptr.npy: decreases at row 1: 3 > 1"},
      {"adj_indptr", NpyFromValues<int32_t>({5}, {0, 1, 3, 4, 5}),
       "bad.npz:adj_indptr.npy: last entry 5 but there are 4 stored entries"},
      {"adj_indptr", NpyFromValues<int32_t>({4}, {0, 1, 3, 4}),
       "bad.npz:adj_indptr.npy: has 4 entries, expected 5"},
      {"adj_indices", NpyFromValues<int32_t>({4}, {1, 2, 9, 2}),
       "bad.npz:adj_indices.npy: entry 2 = 9 outside [0, 4)"},
      {"adj_indices", NpyFromValues<float>({4}, {1, 2, 2, 2}),
       "bad.npz:adj_indices.npy: expected a 1-d <i4 or <i8 array"},
      {"adj_data", NpyFromValues<float>({3}, {1, 1, 1}), "bad.npz:adj_data.npy: expected <f4"},
      {"adj_shape", NpyFromValues<int64_t>({2}, {4, 5}),
       "bad.npz:adj_shape.npy: (4, 5) is not square"},
      {"adj_shape", NpyFromValues<int64_t>({2}, {-4, -4}),
       "bad.npz:adj_shape.npy: shape (-4, -4) outside [0, 2^62)"},
      {"adj_shape", NpyFromValues<int64_t>({2}, {INT64_MAX, INT64_MAX}), "outside [0, 2^62)"},
      {"attr_shape", NpyFromValues<int64_t>({2}, {5, 3}),
       "attr_shape.npy: 5 rows but adj_shape has 4"},
      {"attr_indices", NpyFromValues<int32_t>({4}, {2, 0, 0, 3}),
       "bad.npz:attr_indices.npy: entry 3 = 3 outside [0, 3)"},
      {"labels", NpyFromValues<int64_t>({4}, {0, -1, 1, 2}),
       "bad.npz:labels.npy: labels span [-1, 2]"},
      {"labels", NpyFromValues<int64_t>({3}, {0, 1, 1}),
       "bad.npz:labels.npy: expected an integer array [4]"},
      {"labels", NpyFromValues<float>({4}, {0, 1, 1, 0}),
       "bad.npz:labels.npy: expected an integer array, got <f4"},
      {"labels", NpyBytes("<i8", {4}, std::string(31, '\0')),
       "bad.npz:labels.npy: truncated .npy data", absl::StatusCode::kDataLoss},
  };
  for (const Case& c : cases) {
    auto m = TinyMembers();
    m[c.key] = c.bytes;
    EXPECT_THAT(LoadGnnBenchmarkNpz(WriteNpz("bad.npz", m), "bad"),
                StatusIs(c.code, HasSubstr(c.message)))
        << c.key;
  }
  auto m = TinyMembers();
  m.erase("labels");
  EXPECT_THAT(LoadGnnBenchmarkNpz(WriteNpz("bad.npz", m), "bad"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("bad.npz: no member 'labels.npy'")));
}

TEST(LoadGnnBenchmarkNpzTest, RefusesHugeDenseFeatures) {
  auto m = TinyMembers();
  m["attr_shape"] = NpyFromValues<int64_t>({2}, {4, int64_t{1} << 40});
  EXPECT_THAT(LoadGnnBenchmarkNpz(WriteNpz("huge.npz", m), "huge"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("huge.npz:attr_shape.npy")));
  EXPECT_THAT(LoadGnnBenchmarkNpz(WriteNpz("tiny.npz", TinyMembers()), "tiny", 40),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("exceed 40 bytes")));
}

TEST(LoadGnnBenchmarkNpzTest, MissingFileSaysHowToGetIt) {
  EXPECT_THAT(LoadGnnBenchmarkNpz("/nonexistent/ms_academic_cs.npz", "coauthor_cs"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("/nonexistent/ms_academic_cs.npz: no such file. Dataset "
                                 "'coauthor_cs'")));
}

// ---- real files, when $FGL_DATA_DIR is set ----

struct Expected {
  std::string dir, file;
  int64_t nodes, edges, features, classes;
};

class RealGnnBenchmarkTest : public ::testing::TestWithParam<Expected> {};

TEST_P(RealGnnBenchmarkTest, MatchesPublishedStatistics) {
  const char* root = std::getenv("FGL_DATA_DIR");
  if (root == nullptr || *root == '\0') GTEST_SKIP() << "FGL_DATA_DIR is not set";
  const Expected& e = GetParam();
  const std::string path = std::string(root) + "/" + e.dir + "/" + e.file;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadGnnBenchmarkNpz(path, e.dir));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << e.file << ": " << d.num_nodes() << " nodes, " << d.graph.num_undirected_edges()
            << " edges, " << d.num_features() << " features, " << d.num_classes
            << " classes; loaded in " << seconds << " s\n";
  RecordProperty("load_seconds", std::to_string(seconds));
  EXPECT_EQ(d.num_nodes(), e.nodes);
  EXPECT_EQ(d.graph.num_undirected_edges(), e.edges);
  EXPECT_EQ(d.num_features(), e.features);
  EXPECT_EQ(d.num_classes, e.classes);
  EXPECT_TRUE(d.graph.IsSymmetric());
  EXPECT_EQ(d.graph.CountSelfLoops(), 0);
  // The dense matrix holds exactly the stored attribute values.
  ASSERT_OK_AND_ASSIGN(NpzArchive npz, NpzArchive::Open(path));
  ASSERT_OK_AND_ASSIGN(NpyArray attr_data, npz.ReadArray("attr_data"));
  double total = 0;
  for (float v : attr_data.values<float>()) total += v;
  EXPECT_DOUBLE_EQ(d.features.sum(torch::kFloat64).item<double>(), total);
  EXPECT_EQ(d.features.count_nonzero().item<int64_t>(), attr_data.numel());  // no duplicates
}

INSTANTIATE_TEST_SUITE_P(
    Files, RealGnnBenchmarkTest,
    ::testing::Values(
        Expected{"amazon_computers", "amazon_electronics_computers.npz", 13752, 245861, 767, 10},
        Expected{"amazon_photo", "amazon_electronics_photo.npz", 7650, 119081, 745, 8},
        Expected{"coauthor_cs", "ms_academic_cs.npz", 18333, 81894, 6805, 15},
        Expected{"coauthor_physics", "ms_academic_phy.npz", 34493, 247962, 8415, 5}),
    [](const auto& info) { return info.param.dir; });

}  // namespace
}  // namespace fgl::graph::io
