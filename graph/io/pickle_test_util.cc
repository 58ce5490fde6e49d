#include "graph/io/pickle_test_util.h"

#include <cstring>

namespace fgl::graph::io::testing {
namespace {

void AppendLittle(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

PickleWriter::PickleWriter(int protocol) {
  if (protocol >= 0) {
    out_.push_back('\x80');
    out_.push_back(static_cast<char>(protocol));
  }
}

PickleWriter& PickleWriter::Op(char opcode) {
  out_.push_back(opcode);
  return *this;
}

PickleWriter& PickleWriter::Raw(const std::string& bytes) {
  out_ += bytes;
  return *this;
}

PickleWriter& PickleWriter::Global(const std::string& module, const std::string& name) {
  out_ += "c" + module + "\n" + name + "\n";
  return *this;
}

PickleWriter& PickleWriter::Int(int64_t value) {
  if (value >= 0 && value < 256) {
    out_.push_back('K');
    AppendLittle(out_, value, 1);
  } else if (value >= 0 && value < 65536) {
    out_.push_back('M');
    AppendLittle(out_, value, 2);
  } else {
    out_.push_back('J');
    AppendLittle(out_, static_cast<uint32_t>(static_cast<int32_t>(value)), 4);
  }
  return *this;
}

PickleWriter& PickleWriter::Str(const std::string& value) {
  if (value.size() < 256) {
    out_.push_back('U');
    AppendLittle(out_, value.size(), 1);
  } else {
    out_.push_back('T');
    AppendLittle(out_, value.size(), 4);
  }
  out_ += value;
  return *this;
}

PickleWriter& PickleWriter::Unicode(const std::string& value) {
  out_.push_back('X');
  AppendLittle(out_, value.size(), 4);
  out_ += value;
  return *this;
}

PickleWriter& PickleWriter::Put(uint32_t index) {
  if (index < 256) {
    out_.push_back('q');
    AppendLittle(out_, index, 1);
  } else {
    out_.push_back('r');
    AppendLittle(out_, index, 4);
  }
  return *this;
}

PickleWriter& PickleWriter::Get(uint32_t index) {
  if (index < 256) {
    out_.push_back('h');
    AppendLittle(out_, index, 1);
  } else {
    out_.push_back('j');
    AppendLittle(out_, index, 4);
  }
  return *this;
}

PickleWriter& PickleWriter::NdArray(const std::string& dtype, char order,
                                    const std::vector<int64_t>& shape, const std::string& raw,
                                    bool fortran) {
  Global("numpy.core.multiarray", "_reconstruct").Global("numpy", "ndarray");
  Int(0).Op(op::kTuple1).Str("b").Op(op::kTuple3).Op(op::kReduce);
  Op(op::kMark).Int(1);
  Op(op::kMark);
  for (int64_t d : shape) Int(d);
  Op(op::kTuple);
  Global("numpy", "dtype").Str(dtype).Int(0).Int(1).Op(op::kTuple3).Op(op::kReduce);
  Op(op::kMark).Int(3).Str(std::string(1, order)).Op(op::kNone).Op(op::kNone).Op(op::kNone);
  Int(-1).Int(-1).Int(0).Op(op::kTuple).Op(op::kBuild);
  Op(fortran ? op::kNewTrue : op::kNewFalse).Str(raw).Op(op::kTuple).Op(op::kBuild);
  return *this;
}

PickleWriter& PickleWriter::Csr(int64_t rows, int64_t cols, const std::vector<int32_t>& indptr,
                                const std::vector<int32_t>& indices,
                                const std::vector<float>& data) {
  const int64_t nnz = static_cast<int64_t>(indices.size());
  Global("scipy.sparse.csr", "csr_matrix").Op(op::kEmptyTuple).Op(op::kNewObj);
  Op(op::kEmptyDict).Op(op::kMark);
  Str("format").Str("csr");
  Str("_shape").Int(rows).Int(cols).Op(op::kTuple2);
  Str("indptr").NdArray("i4", '<', {static_cast<int64_t>(indptr.size())}, Int32Bytes(indptr));
  Str("_cs_matrix__has_sorted_indices").Op(op::kNewTrue);
  Str("indices").NdArray("i4", '<', {nnz}, Int32Bytes(indices));
  Str("maxprint").Int(50);
  Str("data").NdArray("f4", '<', {static_cast<int64_t>(data.size())}, FloatBytes(data));
  Op(op::kSetItems).Op(op::kBuild);
  return *this;
}

PickleWriter& PickleWriter::Adjacency(
    const std::vector<std::pair<int64_t, std::vector<int64_t>>>& lists) {
  Global("collections", "defaultdict").Global("__builtin__", "list").Op(op::kTuple1);
  Op(op::kReduce).Op(op::kMark);
  for (const auto& [key, neighbours] : lists) {
    Int(key).Op(op::kEmptyList);
    if (neighbours.size() == 1) {
      Int(neighbours[0]).Op(op::kAppend);
    } else if (!neighbours.empty()) {
      Op(op::kMark);
      for (int64_t v : neighbours) Int(v);
      Op(op::kAppends);
    }
  }
  Op(op::kSetItems);
  return *this;
}

PickleWriter& PickleWriter::TorchTensor(const std::string& storage_class, const std::string& key,
                                        int64_t storage_numel, int64_t offset,
                                        const std::vector<int64_t>& size,
                                        const std::vector<int64_t>& stride,
                                        const std::string& location) {
  auto tuple = [this](const std::vector<int64_t>& v) {
    Op(op::kMark);
    for (int64_t x : v) Int(x);
    Op(op::kTuple);
  };
  Global("torch._utils", "_rebuild_tensor_v2").Op(op::kMark);
  Op(op::kMark).Unicode("storage").Global("torch", storage_class).Unicode(key).Unicode(location);
  Int(storage_numel).Op(op::kTuple).Op(op::kBinPersId);
  Int(offset);
  tuple(size);
  tuple(stride);
  Op(op::kNewFalse).Global("collections", "OrderedDict").Op(op::kEmptyTuple).Op(op::kReduce);
  Op(op::kTuple).Op(op::kReduce);
  return *this;
}

PickleWriter& PickleWriter::PygData(const std::function<void(PickleWriter&)>& fields,
                                    uint32_t data_memo) {
  Global("torch_geometric.data.data", "Data").Op(op::kEmptyTuple).Op(op::kNewObj).Put(data_memo);
  Op(op::kEmptyDict).Op(op::kMark);
  Unicode("_edge_attr_cls").Global("torch_geometric.data.data", "DataEdgeAttr");
  Unicode("_tensor_attr_cls").Global("torch_geometric.data.data", "DataTensorAttr");
  Unicode("_store").Global("torch_geometric.data.storage", "GlobalStorage");
  Op(op::kEmptyTuple).Op(op::kNewObj).Op(op::kEmptyDict).Op(op::kMark);
  Unicode("_mapping").Op(op::kEmptyDict).Op(op::kMark);
  fields(*this);
  Op(op::kSetItems);
  Unicode("_parent").Get(data_memo);
  Op(op::kSetItems).Op(op::kBuild);
  Op(op::kSetItems).Op(op::kBuild);
  return *this;
}

std::string PickleWriter::Stop() {
  out_.push_back(op::kStop);
  return out_;
}

std::string Int32Bytes(const std::vector<int32_t>& values) {
  std::string out;
  for (int32_t v : values) AppendLittle(out, static_cast<uint32_t>(v), 4);
  return out;
}

std::string FloatBytes(const std::vector<float>& values) {
  std::string out;
  for (float f : values) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    AppendLittle(out, bits, 4);
  }
  return out;
}

std::string NdArrayPickle(const std::string& dtype, char order, const std::vector<int64_t>& shape,
                          const std::string& raw, bool fortran) {
  return PickleWriter().NdArray(dtype, order, shape, raw, fortran).Stop();
}

std::string CsrPickle(int64_t rows, int64_t cols, const std::vector<float>& dense) {
  std::vector<int32_t> indptr = {0}, indices;
  std::vector<float> data;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      if (dense[r * cols + c] != 0) {
        indices.push_back(static_cast<int32_t>(c));
        data.push_back(dense[r * cols + c]);
      }
    }
    indptr.push_back(static_cast<int32_t>(indices.size()));
  }
  return PickleWriter().Csr(rows, cols, indptr, indices, data).Stop();
}

std::string OneHotPickle(const std::vector<int>& labels, int num_classes) {
  std::vector<int32_t> onehot(labels.size() * num_classes, 0);
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= 0) onehot[i * num_classes + labels[i]] = 1;
  }
  return NdArrayPickle("i4", '<', {static_cast<int64_t>(labels.size()), num_classes},
                       Int32Bytes(onehot));
}

std::string AdjacencyPickle(const std::vector<std::pair<int64_t, std::vector<int64_t>>>& lists) {
  return PickleWriter().Adjacency(lists).Stop();
}

}  // namespace fgl::graph::io::testing
