#include "graph/partition/reference_partitioner.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/datasets.h"
#include "graph/io/npz_writer.h"
#include "graph/io/pickle_test_util.h"
#include "graph/partition/partition_cache.h"
#include "graph/partition/partitioner_registry.h"
#include "graph/testing/tiny_graphs.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph {
namespace {

using ::fgl::graph::io::testing::NpzMember;
using ::fgl::graph::io::testing::PickleWriter;
using ::fgl::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace op = ::fgl::graph::io::testing::op;

// ---- writing small reference partitions the way FedTAD and OpenFGL saved theirs ----

std::string TensorBytes(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

const char* StorageClass(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat32) return "FloatStorage";
  if (t.scalar_type() == torch::kInt64) return "LongStorage";
  return "BoolStorage";
}

// A torch.save file of a PyG Data whose _mapping holds `tensors` (edge_index saved as PyG does:
// a [2, m] view with stride (1, 2) of an edge-major storage) and, if non-empty, `global_map`.
void WriteData(const std::string& path,
               const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
               const std::vector<int64_t>& global_map = {}) {
  std::vector<NpzMember> members;
  const std::string pickle =
      PickleWriter()
          .PygData([&](PickleWriter& w) {
            for (size_t k = 0; k < tensors.size(); ++k) {
              const auto& [name, t] = tensors[k];
              const std::string key = std::to_string(k);
              w.Unicode(name);
              if (name == "edge_index") {
                w.TorchTensor("LongStorage", key, t.numel(), 0, {2, t.size(1)}, {1, 2});
                members.push_back({"archive/data/" + key, TensorBytes(t.t())});
              } else {
                std::vector<int64_t> stride(t.dim(), 1);
                for (int64_t d = t.dim() - 2; d >= 0; --d)
                  stride[d] = stride[d + 1] * t.size(d + 1);
                w.TorchTensor(StorageClass(t), key, t.numel(), 0, t.sizes().vec(), stride);
                members.push_back({"archive/data/" + key, TensorBytes(t)});
              }
            }
            if (!global_map.empty()) {
              w.Unicode("global_map").Op(op::kEmptyDict).Op(op::kMark);
              for (size_t i = 0; i < global_map.size(); ++i) {
                w.Int(static_cast<int64_t>(i)).Int(global_map[i]);
              }
              w.Op(op::kSetItems);
            }
          })
          .Stop();
  members.insert(members.begin(), NpzMember{"archive/data.pkl", pickle});
  auto zip = io::testing::NpzBytes(members, false);
  ASSERT_OK(zip);
  ASSERT_OK(io::testing::WriteBytes(path, *zip));
}

void WriteTensorFile(const std::string& path, const torch::Tensor& t) {
  const std::string pickle =
      PickleWriter().TorchTensor(StorageClass(t), "0", t.numel(), 0, {t.numel()}, {1}).Stop();
  auto zip = io::testing::NpzBytes({{"t/data.pkl", pickle}, {"t/data/0", TensorBytes(t)}}, false);
  ASSERT_OK(zip);
  ASSERT_OK(io::testing::WriteBytes(path, *zip));
}

void WriteIntList(const std::string& path, const std::vector<int64_t>& ids) {
  PickleWriter w;
  w.Op(op::kEmptyList).Op(op::kMark);
  for (int64_t v : ids) w.Int(v);
  ASSERT_OK(io::testing::WriteBytes(path, w.Op(op::kAppends).Stop()));
}

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", name);
  ::mkdir(dir.c_str(), 0755);
  ::mkdir((dir + "/node_cls").c_str(), 0755);
  return dir;
}

torch::Tensor Mask(int64_t n, const std::vector<int64_t>& on) {
  torch::Tensor m = torch::zeros({n}, torch::kBool);
  for (int64_t i : on) m[i] = true;
  return m;
}

// The induced subgraph of `d` on `nodes` (in that order) as a PyG edge_index.
torch::Tensor InducedEdges(const Dataset& d, const std::vector<int64_t>& nodes) {
  std::vector<int64_t> src, dst;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int64_t g : d.graph.neighbors(nodes[i]))
      for (size_t j = 0; j < nodes.size(); ++j)
        if (nodes[j] == g)
          src.push_back(static_cast<int64_t>(i)), dst.push_back(static_cast<int64_t>(j));
  return torch::stack({torch::tensor(src, torch::kInt64), torch::tensor(dst, torch::kInt64)});
}

struct ClientSpec {
  std::vector<int64_t> nodes;             // global ids in stored local order
  std::vector<int64_t> train, val, test;  // local ids
};

// An OpenFGL-style directory: data_<k>.pt, node_cls/{train,val,test}_<k>.pt and glb_*_<k>.pkl.
std::string WriteOpenFgl(const std::string& name, const Dataset& d,
                         const std::vector<ClientSpec>& clients,
                         const std::function<void(int, torch::Tensor&)>& edit_edges = nullptr) {
  const std::string dir = FreshDir(name);
  for (size_t k = 0; k < clients.size(); ++k) {
    const ClientSpec& c = clients[k];
    const int64_t n = static_cast<int64_t>(c.nodes.size());
    const torch::Tensor ids = torch::tensor(c.nodes, torch::kInt64);
    torch::Tensor ei = InducedEdges(d, c.nodes);
    if (edit_edges) edit_edges(static_cast<int>(k), ei);
    WriteData(absl::StrCat(dir, "/data_", k, ".pt"),
              {{"x", d.features.index_select(0, ids)},
               {"edge_index", ei},
               {"y", d.labels.index_select(0, ids)}},
              c.nodes);
    const std::pair<const char*, const std::vector<int64_t>*> splits[] = {
        {"train", &c.train}, {"val", &c.val}, {"test", &c.test}};
    for (const auto& [s, locals] : splits) {
      WriteTensorFile(absl::StrCat(dir, "/node_cls/", s, "_", k, ".pt"), Mask(n, *locals));
      std::vector<int64_t> glb;
      for (int64_t i : *locals) glb.push_back(c.nodes[i]);
      WriteIntList(absl::StrCat(dir, "/node_cls/glb_", s, "_", k, ".pkl"), glb);
    }
  }
  return dir;
}

// A FedTAD-style directory: data<k>.pt with local and global masks and no node ids.
std::string WriteFedTad(const std::string& name, const Dataset& d,
                        const std::vector<ClientSpec>& clients) {
  const std::string dir = FreshDir(name);
  for (size_t k = 0; k < clients.size(); ++k) {
    const ClientSpec& c = clients[k];
    const int64_t n = static_cast<int64_t>(c.nodes.size());
    const torch::Tensor ids = torch::tensor(c.nodes, torch::kInt64);
    auto global = [&](const std::vector<int64_t>& locals) {
      std::vector<int64_t> g;
      for (int64_t i : locals) g.push_back(c.nodes[i]);
      return Mask(d.num_nodes(), g);
    };
    WriteData(absl::StrCat(dir, "/data", k, ".pt"), {{"x", d.features.index_select(0, ids)},
                                                     {"edge_index", InducedEdges(d, c.nodes)},
                                                     {"y", d.labels.index_select(0, ids)},
                                                     {"train_idx", Mask(n, c.train)},
                                                     {"val_idx", Mask(n, c.val)},
                                                     {"test_idx", Mask(n, c.test)},
                                                     {"global_train_idx", global(c.train)},
                                                     {"global_val_idx", global(c.val)},
                                                     {"global_test_idx", global(c.test)}});
  }
  return dir;
}

// Path 0-1-2-3-4-5 with two feature columns (row v is one-hot at v % 2) and one class: every
// even node has the same row and label, and so does every odd node.
Dataset RepeatedRows() { return testing::TinyDataset(testing::PathGraph(6), 1, 2); }

TEST(ReferencePartitionerTest, OpenFglLayoutKeepsStoredOrderAndSplits) {
  const Dataset d = RepeatedRows();
  const std::string dir =
      WriteOpenFgl("openfgl_ok", d, {{{2, 0, 1}, {0}, {1}, {2}}, {{5, 3, 4}, {0, 1}, {}, {2}}});
  ASSERT_OK_AND_ASSIGN(auto p, MakePartitioner("reference:" + dir));
  EXPECT_EQ(p->Fingerprint(), "reference(dir=" + dir + ")");
  EXPECT_FALSE(p->Cacheable());
  EXPECT_TRUE(p->ProvidesSplits());
  ASSERT_OK_AND_ASSIGN(Partition part, p->Run(d, 2, /*seed=*/1));
  EXPECT_EQ(part.clients, (std::vector<std::vector<int64_t>>{{2, 0, 1}, {5, 3, 4}}));
  ASSERT_EQ(part.client_splits.size(), 2u);
  EXPECT_TRUE(torch::equal(part.client_splits[0].train, Mask(3, {0})));
  EXPECT_TRUE(torch::equal(part.client_splits[1].train, Mask(3, {0, 1})));
  EXPECT_TRUE(torch::equal(part.client_splits[1].test, Mask(3, {2})));
  EXPECT_OK(ValidatePartition(part, d.num_nodes(), /*disjoint=*/true));

  // Bypasses the on-disk cache: nothing is written, and a second call reads the files again.
  const std::string cache = FreshDir("openfgl_cache");
  bool hit = true;
  ASSERT_OK_AND_ASSIGN(Partition cached, CachedPartition(*p, d, 2, 1, cache, &hit));
  EXPECT_FALSE(hit);
  EXPECT_EQ(cached.clients, part.clients);
  EXPECT_EQ(cached.client_splits.size(), 2u);
}

TEST(ReferencePartitionerTest, FedTadLayoutMatchesRowsWithinSplitsAndEdges) {
  const Dataset d = RepeatedRows();
  // Client 0 holds 0..3 with 3 in val and the rest in train: node 3 is the only odd val node,
  // node 1 then the only free odd train node, but nodes 0 and 2 (same row, both train) can only
  // be told apart by their stored edges: local 2 is stored next to local 3 (= node 3).
  const std::string dir =
      WriteFedTad("fedtad_ok", d, {{{0, 1, 2, 3}, {0, 1, 2}, {3}, {}}, {{5, 4}, {}, {1}, {0}}});
  ASSERT_OK_AND_ASSIGN(auto p, MakePartitioner("reference:" + dir));
  ASSERT_OK_AND_ASSIGN(Partition part, p->Run(d, 2, 1));
  EXPECT_EQ(part.clients, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {5, 4}}));
  EXPECT_TRUE(torch::equal(part.client_splits[0].val, Mask(4, {3})));
  EXPECT_TRUE(torch::equal(part.client_splits[1].test, Mask(2, {0})));
}

TEST(ReferencePartitionerTest, FedTadTwinsAreTakenInIdOrder) {
  // A star 0-{1,2}, 3-{1,2}: nodes 0 and 3 have equal rows (one-hot at v % 3 = 0), labels and
  // neighbours; nothing stored tells them apart and either placement gives the same client.
  Dataset d = testing::TinyDataset(
      *CsrGraph::Create(torch::tensor({0, 2, 4, 6, 8}, torch::kInt64),
                        torch::tensor({1, 2, 0, 3, 0, 3, 1, 2}, torch::kInt64)),
      1, 3);
  const std::string dir = WriteFedTad("fedtad_twins", d, {{{3, 1, 2, 0}, {0, 3}, {1, 2}, {}}});
  ASSERT_OK_AND_ASSIGN(auto p, MakePartitioner("reference:" + dir));
  ASSERT_OK_AND_ASSIGN(Partition part, p->Run(d, 1, 1));
  EXPECT_EQ(part.clients[0], (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(ReferencePartitionerTest, MismatchesAreErrorsNamingFileAndClient) {
  const Dataset d = RepeatedRows();
  const std::vector<ClientSpec> clients = {{{0, 1, 2}, {0}, {1}, {2}}, {{3, 4, 5}, {0}, {1}, {2}}};
  // One stored edge not in the graph (0-2 is not a path edge).
  const std::string extra =
      WriteOpenFgl("openfgl_extra_edge", d, clients, [](int k, torch::Tensor& ei) {
        if (k == 1) ei = torch::cat({ei, torch::tensor({{0}, {2}}, torch::kInt64)}, 1);
      });
  ASSERT_OK_AND_ASSIGN(auto p, MakePartitioner("reference:" + extra));
  EXPECT_THAT(p->Run(d, 2, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("data_1.pt (client 1): stored edges differ"),
                             HasSubstr("0 of 4 directed edges missing, 1 extra"),
                             HasSubstr("local (0, 2) = nodes (3, 5)"))));
  // The client count must be the number of files.
  const std::string ok = WriteOpenFgl("openfgl_count", d, clients);
  ASSERT_OK_AND_ASSIGN(p, MakePartitioner("reference:" + ok));
  EXPECT_THAT(p->Run(d, 3, 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("holds 2 clients (data_0.pt ...), not 3")));
  // A dataset with other rows: FedTAD's files cannot be matched to it.
  const std::string fedtad = WriteFedTad("fedtad_rows", d, clients);
  Dataset other = d;
  other.features = d.features * 2;
  ASSERT_OK_AND_ASSIGN(p, MakePartitioner("reference:" + fedtad));
  EXPECT_THAT(p->Run(other, 2, 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                            AllOf(HasSubstr("data0.pt (client 0): local node 0"),
                                                  HasSubstr("matches no free node"))));
  ASSERT_OK_AND_ASSIGN(p, MakePartitioner("reference:" + ok));
  EXPECT_THAT(p->Run(other, 2, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 of 3 x rows differ")));
  // Specs and directories.
  EXPECT_THAT(MakePartitioner("reference"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a directory")));
  ASSERT_OK_AND_ASSIGN(p, MakePartitioner("reference:/nonexistent,dir=1"));
  EXPECT_THAT(p->Run(d, 2, 1),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent,dir=1")));
  ASSERT_OK_AND_ASSIGN(p, MakePartitioner("reference:" + FreshDir("empty")));
  EXPECT_THAT(p->Run(d, 2, 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("either FedTAD's data<k>.pt or OpenFGL's")));
}

// ---- the real reference partitions, when $FGL_DATA_DIR is set ----

struct RealCase {
  std::string dir;
  int clients;
  int64_t client0_nodes;
};

class RealReferenceTest : public ::testing::TestWithParam<RealCase> {};

TEST_P(RealReferenceTest, LoadsAndMatchesCora) {
  const char* root = std::getenv("FGL_DATA_DIR");
  if (root == nullptr || *root == '\0') GTEST_SKIP() << "FGL_DATA_DIR is not set";
  ASSERT_OK_AND_ASSIGN(const Dataset cora, LoadDataset("cora", root));
  const RealCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(
      auto p, MakePartitioner(absl::StrCat("reference:", root, "/reference_partitions/", c.dir)));
  ASSERT_OK_AND_ASSIGN(Partition part, p->Run(cora, c.clients, 0));
  ASSERT_EQ(part.num_clients(), c.clients);
  EXPECT_EQ(static_cast<int64_t>(part.clients[0].size()), c.client0_nodes);
  EXPECT_OK(ValidatePartition(part, cora.num_nodes(), /*disjoint=*/true));
  int64_t total = 0, train = 0;
  for (int k = 0; k < c.clients; ++k) {
    total += static_cast<int64_t>(part.clients[k].size());
    train += part.client_splits[k].train.sum().item<int64_t>();
  }
  EXPECT_EQ(total, cora.num_nodes());      // all three sets cover Cora
  EXPECT_GT(train, cora.num_nodes() / 6);  // about 20% train
  EXPECT_LT(train, cora.num_nodes() / 4);
  EXPECT_THAT(p->Run(cora, c.clients + 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clients")));
}

INSTANTIATE_TEST_SUITE_P(
    Sets, RealReferenceTest,
    ::testing::Values(RealCase{"fedtad_cora_louvain_10", 10, 276},
                      RealCase{"openfgl/subgraph_fl_louvain_1_Cora_client_10", 10, 250},
                      RealCase{"openfgl/subgraph_fl_louvain_1_Cora_client_20", 20, 153}),
    [](const auto& info) { return std::to_string(info.index); });

}  // namespace
}  // namespace fgl::graph
