// Test-only: writes protocol-2 pickles opcode by opcode, laid out the way Python 2 with numpy 1.x
// and scipy pickled the Planetoid files, so tests need neither Python nor real data.
#ifndef FGL_GRAPH_IO_PICKLE_TEST_UTIL_H_
#define FGL_GRAPH_IO_PICKLE_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fgl::graph::io::testing {

// Single-byte opcodes, for tests that write raw streams.
namespace op {
inline constexpr char kMark = '(';
inline constexpr char kStop = '.';
inline constexpr char kNone = 'N';
inline constexpr char kBinPersId = 'Q';
inline constexpr char kReduce = 'R';
inline constexpr char kAppend = 'a';
inline constexpr char kAppends = 'e';
inline constexpr char kBuild = 'b';
inline constexpr char kSetItem = 's';
inline constexpr char kSetItems = 'u';
inline constexpr char kTuple = 't';
inline constexpr char kEmptyDict = '}';
inline constexpr char kEmptyList = ']';
inline constexpr char kEmptyTuple = ')';
inline constexpr char kNewObj = '\x81';
inline constexpr char kTuple1 = '\x85';
inline constexpr char kTuple2 = '\x86';
inline constexpr char kTuple3 = '\x87';
inline constexpr char kNewTrue = '\x88';
inline constexpr char kNewFalse = '\x89';
}  // namespace op

class PickleWriter {
 public:
  // Starts with PROTO `protocol` unless it is negative.
  explicit PickleWriter(int protocol = 2);

  PickleWriter& Op(char opcode);
  PickleWriter& Raw(const std::string& bytes);
  PickleWriter& Global(const std::string& module, const std::string& name);
  PickleWriter& Int(int64_t value);  // BININT1, BININT2 or BININT by size; must fit int32
  PickleWriter& Str(const std::string& value);      // SHORT_BINSTRING, or BINSTRING past 255 bytes
  PickleWriter& Unicode(const std::string& value);  // BINUNICODE
  PickleWriter& Put(uint32_t index);                // BINPUT, or LONG_BINPUT past 255
  PickleWriter& Get(uint32_t index);                // BINGET, or LONG_BINGET past 255

  // numpy 1.x: _reconstruct(ndarray, (0,), 'b') then BUILD (1, shape, dtype, fortran, raw).
  // `dtype` is the name ("i4"), `order` its byte order ('<', '>', '|').
  PickleWriter& NdArray(const std::string& dtype, char order, const std::vector<int64_t>& shape,
                        const std::string& raw, bool fortran = false);
  // scipy: NEWOBJ csr_matrix() then BUILD with the state dict, int32 indptr/indices, f4 data.
  PickleWriter& Csr(int64_t rows, int64_t cols, const std::vector<int32_t>& indptr,
                    const std::vector<int32_t>& indices, const std::vector<float>& data);
  // collections.defaultdict(list) filled with SETITEMS, each list with APPENDS.
  PickleWriter& Adjacency(const std::vector<std::pair<int64_t, std::vector<int64_t>>>& lists);

  // torch.save (PyTorch 1.x/2.x, protocol 2): _rebuild_tensor_v2((BINPERSID ('storage',
  // torch.<storage_class>, key, location, storage_numel)), offset, size, stride, False,
  // OrderedDict()), with REDUCE. Sizes and strides are in elements.
  PickleWriter& TorchTensor(const std::string& storage_class, const std::string& key,
                            int64_t storage_numel, int64_t offset,
                            const std::vector<int64_t>& size, const std::vector<int64_t>& stride,
                            const std::string& location = "cpu");
  // A PyG 2.x Data as torch.save writes it: NEWOBJ Data() memoised at `data_memo`, BUILD with
  // {'_edge_attr_cls': DataEdgeAttr, '_tensor_attr_cls': DataTensorAttr, '_store':
  // GlobalStorage() BUILT with {'_mapping': {<fields>}, '_parent': <the Data>}}. `fields`
  // writes the key/value pairs of `_mapping` (BINUNICODE key, then the value).
  PickleWriter& PygData(const std::function<void(PickleWriter&)>& fields, uint32_t data_memo = 0);

  // Appends STOP and returns the pickle.
  std::string Stop();
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

std::string Int32Bytes(const std::vector<int32_t>& values);  // little-endian
std::string FloatBytes(const std::vector<float>& values);    // little-endian float32

// Whole pickles of one value each.
std::string NdArrayPickle(const std::string& dtype, char order, const std::vector<int64_t>& shape,
                          const std::string& raw, bool fortran = false);
// A dense float32 matrix (row-major `dense`, rows x cols) pickled as a csr_matrix.
std::string CsrPickle(int64_t rows, int64_t cols, const std::vector<float>& dense);
// An int32 one-hot label matrix, rows x num_classes; label -1 gives a zero row.
std::string OneHotPickle(const std::vector<int>& labels, int num_classes);
std::string AdjacencyPickle(const std::vector<std::pair<int64_t, std::vector<int64_t>>>& lists);

}  // namespace fgl::graph::io::testing

#endif  // FGL_GRAPH_IO_PICKLE_TEST_UTIL_H_
