#include "graph/io/torch_pt.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/io/npz_writer.h"
#include "graph/io/pickle_test_util.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::graph::io::testing::NpzMember;
using ::fgl::graph::io::testing::PickleWriter;
using ::fgl::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace op = ::fgl::graph::io::testing::op;

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}
std::string BoolBytes(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

// A torch.save archive as PyTorch lays it out: `archive/data.pkl`, `archive/byteorder`,
// `archive/data/<key>` per storage, `archive/version`.
std::string TorchSaveZip(const std::string& pickle,
                         const std::vector<std::pair<std::string, std::string>>& storages,
                         bool deflate = false) {
  std::vector<NpzMember> members = {{"archive/data.pkl", pickle}, {"archive/byteorder", "little"}};
  for (const auto& [key, bytes] : storages) members.push_back({"archive/data/" + key, bytes});
  members.push_back({"archive/version", "3\n"});
  absl::StatusOr<std::string> zip = testing::NpzBytes(members, deflate);
  EXPECT_OK(zip);
  return zip.ok() ? *zip : std::string();
}

std::string OneTensorPickle(const std::string& storage_class, int64_t numel, int64_t offset,
                            const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  return PickleWriter().TorchTensor(storage_class, "0", numel, offset, size, stride).Stop();
}

absl::StatusOr<torch::Tensor> ParseOneTensor(const std::string& zip,
                                             const std::string& source = "t.pt") {
  absl::StatusOr<PickleValue> v = ParseTorchSave(zip, source);
  if (!v.ok()) return v.status();
  if (v->as_tensor() == nullptr) return absl::InternalError("not a tensor");
  return v->as_tensor()->value;
}

TEST(TorchSaveTest, FloatTensorWithNonContiguousStride) {
  // Storage 0..11. View size [3, 2] stride [1, 3]: element (i, j) = storage[i + 3j], i.e. the
  // transpose of the row-major [2, 3] matrix [[0,1,2],[3,4,5]].
  const std::vector<float> storage = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  ASSERT_OK_AND_ASSIGN(torch::Tensor t, ParseOneTensor(TorchSaveZip(
                                            OneTensorPickle("FloatStorage", 12, 0, {3, 2}, {1, 3}),
                                            {{"0", Bytes(storage)}})));
  EXPECT_EQ(t.dtype(), torch::kFloat32);
  EXPECT_TRUE(t.is_contiguous());
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{3, 2}));
  const float want[3][2] = {{0, 3}, {1, 4}, {2, 5}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(t[i][j].item<float>(), want[i][j]) << i << "," << j;

  // With an offset: size [2, 2] stride [4, 1] offset 1 -> [[1, 2], [5, 6]].
  ASSERT_OK_AND_ASSIGN(
      t, ParseOneTensor(TorchSaveZip(OneTensorPickle("FloatStorage", 12, 1, {2, 2}, {4, 1}),
                                     {{"0", Bytes(storage)}})));
  EXPECT_TRUE(torch::equal(t, torch::tensor({{1.f, 2.f}, {5.f, 6.f}})));
}

TEST(TorchSaveTest, TransposedInt64EdgeIndex) {
  // PyG saves edge_index as a [2, m] view with stride (1, 2) of an edge-major storage
  // (u0, v0, u1, v1, ...): row 0 holds the sources, row 1 the targets.
  const std::vector<int64_t> storage = {0, 1, 1, 0, 1, 2, 2, 1, 5, 7};  // 5 edges
  ASSERT_OK_AND_ASSIGN(torch::Tensor ei, ParseOneTensor(TorchSaveZip(
                                             OneTensorPickle("LongStorage", 10, 0, {2, 5}, {1, 2}),
                                             {{"0", Bytes(storage)}})));
  EXPECT_EQ(ei.dtype(), torch::kInt64);
  EXPECT_TRUE(torch::equal(ei, torch::tensor({{0, 1, 1, 2, 5}, {1, 0, 2, 1, 7}}, torch::kInt64)));
}

TEST(TorchSaveTest, BoolMaskAndSharedStorage) {
  // Two views of one storage: the storage is read once and each result owns its own copy.
  PickleWriter w;
  w.Op(op::kMark);
  w.TorchTensor("BoolStorage", "0", 4, 0, {4}, {1});
  w.TorchTensor("BoolStorage", "0", 4, 2, {2}, {1});
  w.Op(op::kTuple);
  ASSERT_OK_AND_ASSIGN(
      PickleValue v,
      ParseTorchSave(TorchSaveZip(w.Stop(), {{"0", BoolBytes({1, 0, 0, 1})}}), "masks.pt"));
  ASSERT_NE(v.as_tuple(), nullptr);
  ASSERT_EQ(v.as_tuple()->size(), 2u);
  const torch::Tensor a = (*v.as_tuple())[0].as_tensor()->value;
  const torch::Tensor b = (*v.as_tuple())[1].as_tensor()->value;
  EXPECT_TRUE(torch::equal(a, torch::tensor({true, false, false, true})));
  EXPECT_TRUE(torch::equal(b, torch::tensor({false, true})));
  EXPECT_NE(a.data_ptr(), b.data_ptr());
  EXPECT_EQ((*v.as_tuple())[0].as_tensor()->location, "cpu");
}

TEST(TorchSaveTest, StorageSizeMustMatchDeclaredNumel) {
  // Declares 6 floats, holds 5.
  EXPECT_THAT(ParseOneTensor(TorchSaveZip(OneTensorPickle("FloatStorage", 6, 0, {6}, {1}),
                                          {{"0", Bytes(std::vector<float>(5, 1.f))}}),
                             "short.pt"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("archive/data/0 holds 20 bytes, but a FloatStorage of 6 "
                                 "elements needs 24")));
  EXPECT_THAT(ParseOneTensor(TorchSaveZip(OneTensorPickle("LongStorage", 2, 0, {2}, {1}),
                                          {{"0", Bytes(std::vector<int64_t>{1, 2, 3})}})),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("needs 16")));
  // A storage member that is not there.
  EXPECT_THAT(ParseOneTensor(TorchSaveZip(OneTensorPickle("LongStorage", 2, 0, {2}, {1}), {})),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("no member archive/data/0")));
}

TEST(TorchSaveTest, ViewsOutsideTheirStorageAreRefused) {
  const std::string six = Bytes(std::vector<float>{0, 1, 2, 3, 4, 5});
  auto parse = [&](int64_t offset, std::vector<int64_t> size, std::vector<int64_t> stride) {
    return ParseOneTensor(
        TorchSaveZip(OneTensorPickle("FloatStorage", 6, offset, size, stride), {{"0", six}}),
        "view.pt");
  };
  // [2, 3] row-major from offset 1 reaches element 1 + 3 + 2 = 6 of 6.
  EXPECT_THAT(parse(1, {2, 3}, {3, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("view.pt:archive/data.pkl: byte"),
                             HasSubstr("reaches element 6, outside the storage"))));
  EXPECT_THAT(parse(0, {2, 3}, {1, 3}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reaches element 7")));
  EXPECT_THAT(parse(7, {0}, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offset outside")));
  EXPECT_THAT(parse(0, {2}, {1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dimensions, stride 2")));
  EXPECT_THAT(parse(0, {int64_t{1} << 30, int64_t{1} << 30, int64_t{1} << 30}, {0, 0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
  // Inside the bounds: [2, 3] from offset 0 covers exactly the six elements; empty views too.
  EXPECT_OK(parse(0, {2, 3}, {3, 1}));
  EXPECT_OK(parse(6, {0, 3}, {3, 1}));
  // A stride-0 view of one element cannot expand past the file's budget.
  EXPECT_THAT(parse(0, {int64_t{1} << 30}, {0}),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("budget")));
}

TEST(TorchSaveTest, BoolStorageBytesMustBeZeroOrOne) {
  EXPECT_THAT(ParseOneTensor(TorchSaveZip(OneTensorPickle("BoolStorage", 3, 0, {3}, {1}),
                                          {{"0", BoolBytes({0, 2, 1})}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bool element 1 is 2")));
}

// The classic payload inside a torch.save archive: GLOBAL module\nname\n, arguments, REDUCE.
std::string CallZip(const std::string& module, const std::string& name) {
  return TorchSaveZip(PickleWriter()
                          .Global(module, name)
                          .Unicode("touch /tmp/pwned")
                          .Op(op::kTuple1)
                          .Op(op::kReduce)
                          .Stop(),
                      {});
}

TEST(TorchSaveTest, RefusesGlobalsOutsideTheAllowList) {
  EXPECT_THAT(ParseTorchSave(CallZip("posix", "system"), "evil.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("evil.pt:archive/data.pkl: byte 2: GLOBAL"),
                             HasSubstr("global 'posix system' is not allowed"))));
  EXPECT_THAT(ParseTorchSave(CallZip("builtins", "eval"), "evil.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("evil.pt"), HasSubstr("'builtins eval'"))));
  EXPECT_THAT(ParseTorchSave(CallZip("os", "system"), "evil.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'os system'")));
  // torch's own loaders that would run code or read arbitrary bytes are not on the list either.
  EXPECT_THAT(ParseTorchSave(CallZip("torch.storage", "_load_from_bytes"), "evil.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'torch.storage _load_from_bytes' is not allowed")));
  // Allowed names, used in ways torch.save never does, are refused too.
  EXPECT_THAT(ParseTorchSave(CallZip("torch_geometric.data.data", "Data"), "evil.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("calling")));
  EXPECT_THAT(ParseTorchSave(CallZip("collections", "OrderedDict"), "evil.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("OrderedDict()")));
  // The plain unpickler keeps refusing the torch and PyG globals.
  EXPECT_THAT(Unpickle(OneTensorPickle("FloatStorage", 1, 0, {1}, {1})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("global 'torch._utils _rebuild_tensor_v2' is not allowed")));
  EXPECT_THAT(Unpickle(PickleWriter().PygData([](PickleWriter&) {}).Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'torch_geometric.data.data Data' is not allowed")));
}

TEST(TorchSaveTest, TruncatedArchiveOrPickleIsDataLoss) {
  const std::string zip = TorchSaveZip(OneTensorPickle("FloatStorage", 2, 0, {2}, {1}),
                                       {{"0", Bytes(std::vector<float>{1, 2})}});
  ASSERT_OK(ParseOneTensor(zip));
  for (size_t n : {size_t{0}, size_t{10}, zip.size() / 2, zip.size() - 1}) {
    EXPECT_THAT(ParseTorchSave(zip.substr(0, n), "cut.pt"),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr("cut.pt"), HasSubstr("not a valid torch.save"))))
        << n;
  }
  // A whole zip whose pickle stops early.
  const std::string pickle = OneTensorPickle("FloatStorage", 2, 0, {2}, {1});
  EXPECT_THAT(ParseTorchSave(TorchSaveZip(pickle.substr(0, pickle.size() / 2), {}), "half.pt"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("half.pt:archive/data.pkl: truncated at byte")));
  // Not a torch.save layout.
  EXPECT_THAT(ParseTorchSave(*testing::NpzBytes({{"x.npy", "abc"}}, false), "npz.pt"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("has 0")));
  // A big-endian file.
  EXPECT_THAT(
      ParseTorchSave(
          *testing::NpzBytes(
              {{"a/data.pkl", PickleWriter().Op(op::kNone).Stop()}, {"a/byteorder", "big"}}, false),
          "be.pt"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("only little-endian")));
  // A missing file.
  EXPECT_THAT(ReadTorchSave("/nonexistent/x.pt"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/x.pt")));
}

TEST(TorchSaveTest, PygDataReadsAsItsAttributes) {
  const std::string pickle =
      PickleWriter()
          .PygData([](PickleWriter& w) {
            w.Unicode("x").TorchTensor("FloatStorage", "0", 4, 0, {2, 2}, {2, 1});
            w.Unicode("edge_index").TorchTensor("LongStorage", "1", 4, 0, {2, 2}, {1, 2});
            w.Unicode("global_map").Op(op::kEmptyDict).Op(op::kMark);
            w.Int(0).Int(17).Int(1).Int(3).Op(op::kSetItems);
            w.Unicode("num_global_classes").Int(7);
          })
          .Stop();
  const std::string zip = TorchSaveZip(pickle,
                                       {{"0", Bytes(std::vector<float>{1, 2, 3, 4})},
                                        {"1", Bytes(std::vector<int64_t>{0, 1, 1, 0})}},
                                       /*deflate=*/true);
  ASSERT_OK_AND_ASSIGN(PickleValue v, ParseTorchSave(zip, "data_0.pt"));
  ASSERT_NE(v.as_dict(), nullptr);
  const PickleValue* edge_cls = v.as_dict()->Find(std::string("_edge_attr_cls"));
  ASSERT_NE(edge_cls, nullptr);
  ASSERT_NE(edge_cls->as_class(), nullptr);
  EXPECT_EQ(*edge_cls->as_class(), "torch_geometric.data.data.DataEdgeAttr");
  EXPECT_EQ(edge_cls->as_string(), nullptr);  // a class is not a str
  // GlobalStorage's `_parent` points back at the Data: the cycle reads as None.
  const PickleDict* store = v.as_dict()->Find(std::string("_store"))->as_dict();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Find(std::string("_parent"))->is_none());

  ASSERT_OK_AND_ASSIGN(const PickleDict* attrs, PygDataAttributes(v, "data_0.pt"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor x, TensorField(*attrs, "x", "data_0.pt"));
  EXPECT_TRUE(torch::equal(x, torch::tensor({{1.f, 2.f}, {3.f, 4.f}})));
  ASSERT_OK_AND_ASSIGN(torch::Tensor ei, TensorField(*attrs, "edge_index", "data_0.pt"));
  EXPECT_TRUE(torch::equal(ei, torch::tensor({{0, 1}, {1, 0}}, torch::kInt64)));
  const PickleDict* map = attrs->Find(std::string("global_map"))->as_dict();
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(*map->Find(int64_t{1})->as_int(), 3);
  EXPECT_EQ(*attrs->Find(std::string("num_global_classes"))->as_int(), 7);
  EXPECT_THAT(TensorField(*attrs, "y", "data_0.pt"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("data_0.pt: no field 'y'")));
  EXPECT_THAT(TensorField(*attrs, "global_map", "data_0.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a dict, not a tensor")));
  EXPECT_THAT(PygDataAttributes(PickleValue::Int(1), "w.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("w.pt: expected a PyG Data")));
}

TEST(PickledIntListTest, ReadsProtocolFourLists) {
  // What Python 3.8+ writes for pickle.dump([64, 111, 300]): PROTO 4, FRAME, EMPTY_LIST,
  // MEMOIZE, MARK, BININT1/BININT2 ..., APPENDS, STOP.
  std::string body = PickleWriter(-1)
                         .Op(op::kEmptyList)
                         .Raw("\x94")
                         .Op(op::kMark)
                         .Int(64)
                         .Int(111)
                         .Int(300)
                         .Op('e')
                         .Stop();
  std::string frame("\x95", 1);
  for (int i = 0; i < 8; ++i) frame.push_back(static_cast<char>((body.size() >> (8 * i)) & 0xff));
  const std::string pickle = std::string("\x80\x04", 2) + frame + body;
  const std::string path = std::string(::testing::TempDir()) + "/glb_train_0.pkl";
  ASSERT_OK(testing::WriteBytes(path, pickle));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> ids, ReadPickledIntList(path));
  EXPECT_EQ(ids, (std::vector<int64_t>{64, 111, 300}));
  // The default unpickler still stops at protocol 2.
  EXPECT_THAT(Unpickle(pickle),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("protocol 4")));
  // A frame longer than the rest of the input is truncation.
  UnpickleOptions four;
  four.max_protocol = 4;
  EXPECT_THAT(Unpickle(std::string("\x80\x04\x95\xff\0\0\0\0\0\0\0N.", 13), "f", four),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
  // Not a list of ints.
  ASSERT_OK(
      testing::WriteBytes(path, PickleWriter().Op(op::kEmptyList).Unicode("a").Op('a').Stop()));
  EXPECT_THAT(ReadPickledIntList(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("item 0 is a str")));
}

// ---- real files, when $FGL_DATA_DIR is set ----

std::string ReferenceDir() {
  const char* root = std::getenv("FGL_DATA_DIR");
  if (root == nullptr || *root == '\0') return "";
  return std::string(root) + "/reference_partitions";
}

double EdgeHomophily(const torch::Tensor& edge_index, const torch::Tensor& y) {
  const torch::Tensor same = y.index({edge_index[0]}) == y.index({edge_index[1]});
  return same.to(torch::kFloat64).mean().item<double>();
}

TEST(RealTorchSaveTest, FedTadClientZero) {
  const std::string dir = ReferenceDir();
  if (dir.empty()) GTEST_SKIP() << "FGL_DATA_DIR is not set";
  const std::string path = dir + "/fedtad_cora_louvain_10/data0.pt";
  ASSERT_OK_AND_ASSIGN(PickleValue v, ReadTorchSave(path));
  ASSERT_OK_AND_ASSIGN(const PickleDict* a, PygDataAttributes(v, path));
  ASSERT_OK_AND_ASSIGN(torch::Tensor x, TensorField(*a, "x", path));
  ASSERT_OK_AND_ASSIGN(torch::Tensor ei, TensorField(*a, "edge_index", path));
  ASSERT_OK_AND_ASSIGN(torch::Tensor y, TensorField(*a, "y", path));
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{276, 1433}));
  EXPECT_EQ(x.dtype(), torch::kFloat32);
  // Cora's raw binary bag-of-words rows.
  EXPECT_TRUE(x.eq(0).logical_or(x.eq(1)).all().item<bool>());
  EXPECT_EQ(ei.size(0), 2);
  EXPECT_EQ(ei.size(1), 788);
  EXPECT_GE(ei.min().item<int64_t>(), 0);
  EXPECT_LT(ei.max().item<int64_t>(), 276);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{276}));
  EXPECT_GT(EdgeHomophily(ei, y), 0.8);
  for (const char* mask : {"train_idx", "val_idx", "test_idx"}) {
    ASSERT_OK_AND_ASSIGN(torch::Tensor m, TensorField(*a, mask, path));
    EXPECT_EQ(m.dtype(), torch::kBool);
    EXPECT_EQ(m.sizes(), (std::vector<int64_t>{276})) << mask;
    ASSERT_OK_AND_ASSIGN(torch::Tensor g, TensorField(*a, absl::StrCat("global_", mask), path));
    EXPECT_EQ(g.sizes(), (std::vector<int64_t>{2708})) << mask;
    EXPECT_EQ(g.sum().item<int64_t>(), m.sum().item<int64_t>()) << mask;
  }
  // The small checkpoint file FedTAD keeps beside the clients, saved from a GPU.
  ASSERT_OK_AND_ASSIGN(PickleValue ckr,
                       ReadTorchSave(dir + "/fedtad_cora_louvain_10/ckr_Cora_Louvain_10.pt"));
  ASSERT_NE(ckr.as_tensor(), nullptr);
  EXPECT_EQ(ckr.as_tensor()->value.sizes(), (std::vector<int64_t>{10, 7}));
  EXPECT_EQ(ckr.as_tensor()->location, "cuda:0");
}

TEST(RealTorchSaveTest, OpenFglCora10ClientZero) {
  const std::string dir = ReferenceDir();
  if (dir.empty()) GTEST_SKIP() << "FGL_DATA_DIR is not set";
  const std::string root = dir + "/openfgl/subgraph_fl_louvain_1_Cora_client_10";
  const std::string path = root + "/data_0.pt";
  ASSERT_OK_AND_ASSIGN(PickleValue v, ReadTorchSave(path));
  ASSERT_OK_AND_ASSIGN(const PickleDict* a, PygDataAttributes(v, path));
  ASSERT_OK_AND_ASSIGN(torch::Tensor x, TensorField(*a, "x", path));
  ASSERT_OK_AND_ASSIGN(torch::Tensor ei, TensorField(*a, "edge_index", path));
  ASSERT_OK_AND_ASSIGN(torch::Tensor y, TensorField(*a, "y", path));
  const int64_t n = x.size(0);
  EXPECT_EQ(n, 250);
  EXPECT_EQ(x.size(1), 1433);
  EXPECT_EQ(ei.sizes(), (std::vector<int64_t>{2, 768}));
  EXPECT_EQ(*a->Find(std::string("num_global_classes"))->as_int(), 7);
  const PickleDict* map = a->Find(std::string("global_map"))->as_dict();
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(static_cast<int64_t>(map->entries.size()), n);

  // Strides honoured: edge homophily about 0.97 and every edge stored in both directions, as
  // PyG keeps undirected graphs. Read as if contiguous (the storage's edge-major order cut into
  // two rows) the same bytes pair up unrelated nodes: most pairs have no reverse. (This client
  // is 94% one class, so the scrambled pairs still look homophilous: 0.945.)
  const double h = EdgeHomophily(ei, y);
  EXPECT_NEAR(h, 0.97, 0.01);
  const torch::Tensor scrambled = ei.t().contiguous().view({2, -1});
  auto reversed_fraction = [n](const torch::Tensor& e) {
    const torch::Tensor forward = e[0] * n + e[1], backward = e[1] * n + e[0];
    return torch::isin(backward, forward).to(torch::kFloat64).mean().item<double>();
  };
  EXPECT_EQ(reversed_fraction(ei), 1.0);
  EXPECT_LT(reversed_fraction(scrambled), 0.5);
  std::cout << "OpenFGL Cora-10 client 0: " << n << " nodes, " << ei.size(1)
            << " directed edges, edge homophily " << h << "; read as contiguous: homophily "
            << EdgeHomophily(scrambled, y) << ", edges with a reverse "
            << reversed_fraction(scrambled) << "\n";

  // The local split and the same nodes as global ids.
  ASSERT_OK_AND_ASSIGN(torch::Tensor train, ReadTorchSaveTensor(root + "/node_cls/train_0.pt"));
  EXPECT_EQ(train.dtype(), torch::kBool);
  EXPECT_EQ(train.size(0), n);
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> glb,
                       ReadPickledIntList(root + "/node_cls/glb_train_0.pkl"));
  std::vector<int64_t> want;
  for (int64_t i = 0; i < n; ++i) {
    if (train[i].item<bool>()) want.push_back(*map->Find(i)->as_int());
  }
  EXPECT_EQ(glb, want);
}

}  // namespace
}  // namespace fgl::graph::io
