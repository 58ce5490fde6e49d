#include "graph/io/planetoid.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/io/pickle_test_util.h"
#include "graph/testing/data_root.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::graph::io::testing::AdjacencyPickle;
using ::fgl::graph::io::testing::CsrPickle;
using ::fgl::graph::io::testing::OneHotPickle;
using ::fgl::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Adjacency = std::vector<std::pair<int64_t, std::vector<int64_t>>>;

std::vector<float> Row(const torch::Tensor& features, int64_t v) {
  torch::Tensor r = features[v].contiguous();
  return std::vector<float>(r.data_ptr<float>(), r.data_ptr<float>() + r.numel());
}

std::vector<int64_t> MaskNodes(const torch::Tensor& mask) {
  torch::Tensor idx = mask.nonzero().flatten().contiguous();
  return std::vector<int64_t>(idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + idx.numel());
}

// A Planetoid-shaped toy: 3 training nodes, 500 validation nodes (allx has 503 rows, 4 features,
// 3 classes), then test nodes at `test_index` with tx row i = [10 + i, 0, 0, 1] and ty label
// `test_labels[i]`. allx row v is one-hot at column v % 4; its label is v % 3.
struct Toy {
  std::vector<int64_t> test_index;
  std::vector<int> test_labels;
  Adjacency graph;
  std::string test_index_text;  // overrides the text made from `test_index` when non-empty
};

class PlanetoidFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/planetoid_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ::mkdir(dir_.c_str(), 0755);
  }

  void Write(const std::string& name, const std::string& part, const std::string& bytes) {
    std::ofstream(absl::StrCat(dir_, "/ind.", name, ".", part), std::ios::binary) << bytes;
  }

  void WriteToy(const std::string& name, const Toy& toy) {
    const int64_t num_all = 503, num_train = 3, f = 4;
    std::vector<float> allx(num_all * f, 0);
    std::vector<int> ally(num_all);
    for (int64_t v = 0; v < num_all; ++v) {
      allx[v * f + v % 4] = 1;
      ally[v] = static_cast<int>(v % 3);
    }
    const int64_t num_test = static_cast<int64_t>(toy.test_index.size());
    std::vector<float> tx(num_test * f, 0);
    for (int64_t i = 0; i < num_test; ++i) {
      tx[i * f] = 10 + i;
      tx[i * f + 3] = 1;
    }
    Write(name, "x",
          CsrPickle(num_train, f, std::vector<float>(allx.begin(), allx.begin() + num_train * f)));
    Write(name, "tx", CsrPickle(num_test, f, tx));
    Write(name, "allx", CsrPickle(num_all, f, allx));
    Write(name, "y", OneHotPickle(std::vector<int>(ally.begin(), ally.begin() + num_train), 3));
    Write(name, "ty", OneHotPickle(toy.test_labels, 3));
    Write(name, "ally", OneHotPickle(ally, 3));
    Write(name, "graph", AdjacencyPickle(toy.graph));
    std::string text = toy.test_index_text;
    if (text.empty()) {
      for (int64_t v : toy.test_index) absl::StrAppend(&text, v, "\n");
    }
    Write(name, "test.index", text);
  }

  std::string dir_;
};

TEST_F(PlanetoidFilesTest, CiteSeerPadsTheTestRange) {
  // Test ids 507, 503, 505 (file order): the range 503..507 has gaps at 504 and 506, so there
  // are 503 + 5 = 508 nodes. Edges: 0-1 twice, a self-loop 0-0, 1-2, 505-507 -> 3 undirected.
  Toy toy{{507, 503, 505}, {2, 1, 0}, {{0, {1, 1, 0}}, {1, {2}}, {505, {507}}, {2, {}}}, ""};
  WriteToy("citeseer", toy);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadPlanetoid(dir_, "citeseer"));
  EXPECT_EQ(d.name, "citeseer");
  EXPECT_EQ(d.num_nodes(), 508);
  EXPECT_EQ(d.num_features(), 4);
  EXPECT_EQ(d.num_classes, 3);
  // Test node test_index[i] holds tx row i and ty label i.
  EXPECT_THAT(Row(d.features, 507), ElementsAre(10, 0, 0, 1));
  EXPECT_THAT(Row(d.features, 503), ElementsAre(11, 0, 0, 1));
  EXPECT_THAT(Row(d.features, 505), ElementsAre(12, 0, 0, 1));
  EXPECT_EQ(d.labels[507].item<int64_t>(), 2);
  EXPECT_EQ(d.labels[503].item<int64_t>(), 1);
  EXPECT_EQ(d.labels[505].item<int64_t>(), 0);
  // The gaps are isolated zero rows with label 0.
  EXPECT_THAT(Row(d.features, 504), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(Row(d.features, 506), ElementsAre(0, 0, 0, 0));
  EXPECT_EQ(d.labels[504].item<int64_t>(), 0);
  EXPECT_EQ(d.graph.degree(504), 0);
  // allx rows stay in place.
  EXPECT_THAT(Row(d.features, 10), ElementsAre(0, 0, 1, 0));
  EXPECT_EQ(d.labels[10].item<int64_t>(), 1);

  EXPECT_EQ(d.graph.num_undirected_edges(), 3);
  EXPECT_TRUE(d.graph.IsSymmetric());
  EXPECT_EQ(d.graph.CountSelfLoops(), 0);
  EXPECT_THAT(std::vector<int64_t>(d.graph.neighbors(1).begin(), d.graph.neighbors(1).end()),
              ElementsAre(0, 2));

  ASSERT_EQ(d.provided_splits.size(), 1u);
  const NodeSplit& s = d.provided_splits[0];
  EXPECT_THAT(MaskNodes(s.train), ElementsAre(0, 1, 2));
  EXPECT_EQ(s.val.sum().item<int64_t>(), 500);
  EXPECT_TRUE(s.val[3].item<bool>());
  EXPECT_TRUE(s.val[502].item<bool>());
  EXPECT_THAT(MaskNodes(s.test), ElementsAre(503, 505, 507));
}

TEST_F(PlanetoidFilesTest, CoraReordersTestRowsWithoutPadding) {
  // Contiguous test ids 505, 503, 504: 506 nodes, node test_index[i] gets tx row i.
  WriteToy("cora", Toy{{505, 503, 504}, {0, 1, 2}, {{0, {1}}}, ""});
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadPlanetoid(dir_, "cora"));
  EXPECT_EQ(d.num_nodes(), 506);
  EXPECT_THAT(Row(d.features, 505), ElementsAre(10, 0, 0, 1));
  EXPECT_THAT(Row(d.features, 503), ElementsAre(11, 0, 0, 1));
  EXPECT_THAT(Row(d.features, 504), ElementsAre(12, 0, 0, 1));
  EXPECT_EQ(d.labels[503].item<int64_t>(), 1);
  EXPECT_EQ(d.graph.num_undirected_edges(), 1);
}

TEST_F(PlanetoidFilesTest, CoraRejectsAGapInTheTestRange) {
  // Without CiteSeer's padding, 503 + 3 nodes cannot hold test id 507 (PyG fails too).
  WriteToy("cora", Toy{{503, 504, 507}, {0, 1, 2}, {}, ""});
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ind.cora.test.index: node 507 outside [0, 506)")));
}

TEST_F(PlanetoidFilesTest, MissingFileSaysHowToGetIt) {
  WriteToy("pubmed", Toy{{503}, {0}, {}, ""});
  ASSERT_EQ(std::remove(absl::StrCat(dir_, "/ind.pubmed.allx").c_str()), 0);
  EXPECT_THAT(LoadPlanetoid(dir_, "pubmed"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(absl::StrCat(dir_, "/ind.pubmed.allx: no such file"))));
  EXPECT_THAT(LoadPlanetoid(dir_, "pubmed"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("download_datasets.sh pubmed")));
}

TEST_F(PlanetoidFilesTest, UnknownName) {
  EXPECT_THAT(LoadPlanetoid(dir_, "nell"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown Planetoid dataset 'nell'")));
}

TEST_F(PlanetoidFilesTest, NeighbourOutOfRangeNamesTheFile) {
  WriteToy("citeseer", Toy{{503}, {0}, {{0, {1}}, {1, {9999}}}, ""});
  EXPECT_THAT(
      LoadPlanetoid(dir_, "citeseer"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("ind.citeseer.graph: node 1 lists neighbour 9999 outside [0, 504)")));
  WriteToy("citeseer", Toy{{503}, {0}, {{-3, {1}}}, ""});
  EXPECT_THAT(LoadPlanetoid(dir_, "citeseer"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ind.citeseer.graph: node -3 outside")));
}

TEST_F(PlanetoidFilesTest, TestIndexIsParsedStrictly) {
  WriteToy("cora", Toy{{503, 504}, {0, 1}, {}, "503\n5o4\n"});
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ind.cora.test.index:2: '5o4' is not an integer in [0, 2^31)")));
  WriteToy("cora", Toy{{503, 504}, {0, 1}, {}, "503\n9223372036854775807\n"});
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("test.index:2: '922")));
  WriteToy("cora", Toy{{503, 504}, {0, 1}, {}, "503\n\n504\n"});
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("test.index:2: ''")));
  WriteToy("cora", Toy{{503, 504}, {0, 1}, {}, "503\n503\n"});
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("503 is listed twice")));
  WriteToy("cora", Toy{{503, 504}, {0, 1}, {}, "503\r\n504"});  // CRLF, no final newline
  EXPECT_OK(LoadPlanetoid(dir_, "cora"));
}

TEST_F(PlanetoidFilesTest, ShapeMismatchAndBadPicklesNameTheFile) {
  WriteToy("cora", Toy{{503, 504}, {0, 1}, {}, "503\n504\n505\n"});  // 3 ids, 2 tx rows
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ind.cora.tx: rows")));

  WriteToy("cora", Toy{{503, 504}, {0, 1}, {}, ""});
  Write("cora", "ty", testing::PickleWriter().Global("os", "system").Stop());
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ind.cora.ty: byte 2: GLOBAL: global 'os system'")));

  const std::string y = OneHotPickle({0, 1, 2}, 3);
  Write("cora", "ty", OneHotPickle({0, 1}, 3));
  Write("cora", "y", y.substr(0, y.size() - 7));
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("ind.cora.y: truncated at byte")));

  Write("cora", "y", testing::PickleWriter().Int(3).Stop());
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ind.cora.y: expected a csr_matrix or a 2-D ndarray, got int")));

  // A csr column outside the declared width.
  testing::PickleWriter bad_col;
  bad_col.Csr(1, 4, {0, 1}, {7}, {1.0f});
  Write("cora", "y", OneHotPickle({0, 1, 2}, 3));
  Write("cora", "x", bad_col.Stop());
  EXPECT_THAT(LoadPlanetoid(dir_, "cora"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ind.cora.x: csr row 0 has column 7 outside [0, 4)")));
}

// The real files: only with FGL_DATA_DIR (see .bazelrc).
class RealPlanetoidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("FGL_DATA_DIR");
    if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "FGL_DATA_DIR is not set";
    root_ = dir;
  }
  std::string root_;
};

TEST_F(RealPlanetoidTest, Cora) {
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadPlanetoid(root_ + "/cora", "cora"));
  EXPECT_EQ(d.num_nodes(), 2708);
  EXPECT_EQ(d.graph.num_undirected_edges(), 5278);
  EXPECT_TRUE(d.graph.IsSymmetric());
  EXPECT_EQ(d.num_features(), 1433);
  EXPECT_EQ(d.num_classes, 7);
  EXPECT_THAT(LabelCounts(d), ElementsAre(351, 217, 418, 818, 426, 298, 180));
  const NodeSplit& s = d.provided_splits.at(0);
  EXPECT_EQ(s.train.sum().item<int64_t>(), 140);
  EXPECT_EQ(s.val.sum().item<int64_t>(), 500);
  EXPECT_EQ(s.test.sum().item<int64_t>(), 1000);
  EXPECT_EQ((s.train & s.test).sum().item<int64_t>(), 0);
  EXPECT_EQ(d.features.sum().item<float>(), 49216);  // binary bag of words, 18.17 words a paper
}

TEST_F(RealPlanetoidTest, CiteSeer) {
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadPlanetoid(root_ + "/citeseer", "citeseer"));
  EXPECT_EQ(d.num_nodes(), 3327);
  EXPECT_EQ(d.graph.num_undirected_edges(), 4552);
  EXPECT_EQ(d.num_features(), 3703);
  EXPECT_EQ(d.num_classes, 6);
  const NodeSplit& s = d.provided_splits.at(0);
  EXPECT_EQ(s.train.sum().item<int64_t>(), 120);
  EXPECT_EQ(s.val.sum().item<int64_t>(), 500);
  EXPECT_EQ(s.test.sum().item<int64_t>(), 1000);
  // The 15 padded ids in 2312..3326 are outside the test mask.
  EXPECT_EQ(s.test.slice(0, 2312).sum().item<int64_t>(), 1000);
}

TEST_F(RealPlanetoidTest, PubMed) {
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadPlanetoid(root_ + "/pubmed", "pubmed"));
  EXPECT_EQ(d.num_nodes(), 19717);
  EXPECT_EQ(d.graph.num_undirected_edges(), 44324);
  EXPECT_TRUE(d.graph.IsSymmetric());
  EXPECT_EQ(d.num_features(), 500);
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_THAT(LabelCounts(d), ElementsAre(4103, 7739, 7875));
  const NodeSplit& s = d.provided_splits.at(0);
  EXPECT_EQ(s.train.sum().item<int64_t>(), 60);
  EXPECT_EQ(s.val.sum().item<int64_t>(), 500);
  EXPECT_EQ(s.test.sum().item<int64_t>(), 1000);
}

// The real root is complete; the missing-file error is checked on a generated one without allx.
TEST_F(RealPlanetoidTest, PubMedWithoutAllxNamesTheFile) {
  ASSERT_OK_AND_ASSIGN(std::string root,
                       graph::testing::DataRootWithout(
                           root_, "pubmed", "ind.pubmed.allx",
                           ::testing::TempDir() + "/planetoid_test_pubmed_without_allx"));
  EXPECT_THAT(LoadPlanetoid(root + "/pubmed", "pubmed"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("ind.pubmed.allx: no such file")));
}

}  // namespace
}  // namespace fgl::graph::io
