// A restricted unpickler for the Python-2 protocol-2 pickles of the Planetoid datasets: numpy
// arrays, scipy CSR matrices, defaultdict(list) adjacency and the plain values around them.
// Options add, one group at a time, what torch.save and PyG's Data pickle (torch_pt.h reads
// those) and protocol-4 plain lists. It is not a port of CPython's unpickler: it knows a fixed
// set of opcodes and globals, calls nothing, and treats its input as untrusted (every read is
// bounded, every allocation budgeted).
#ifndef FGL_GRAPH_IO_PICKLE_H_
#define FGL_GRAPH_IO_PICKLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fgl::graph::io {

// A numpy array as pickled: raw bytes plus the numpy type string.
struct NdArray {
  // Byte order + kind + item size, as numpy's `dtype.str`: "<i4", "<f4", "<f8", "<i8", "|b1",
  // "|u1", ">i4", ... Kinds are b (bool), i, u, f; nothing else is accepted.
  std::string dtype;
  std::vector<int64_t> shape;
  bool fortran_order = false;  // column-major `data`
  std::string data;            // exactly num_elements() * itemsize() bytes

  int64_t itemsize() const;      // from `dtype`
  int64_t num_elements() const;  // product of `shape` (1 for a 0-d array)
};

// A scipy.sparse.csr_matrix. The unpickler checks only the arrays' shapes and kinds (1-D, integer
// indptr of num_rows + 1 entries and indices, as many indices as data); values are unchecked.
struct CsrMatrix {
  int64_t num_rows = 0, num_cols = 0;
  NdArray data, indices, indptr;
};

// A tensor as torch.save pickles it: `torch._utils._rebuild_tensor_v2(storage, offset, size,
// stride, requires_grad, OrderedDict())`, where the storage is a persistent id naming bytes kept
// outside the pickle. Offset, size and stride count elements; nothing here is checked against
// the storage (the reader that owns the storage bytes does that).
struct TorchTensorSpec {
  std::string storage_type;   // "FloatStorage", "LongStorage" or "BoolStorage"
  std::string storage_key;    // names the zip member `<archive>/data/<key>`
  std::string location;       // the device it was saved from ("cpu", "cuda:0"); informational
  int64_t storage_numel = 0;  // elements the persistent id says the storage holds
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
  bool requires_grad = false;
};

// A tensor read from a torch.save file. Defined in graph/io/torch_pt.h: the unpickler only
// carries what its `rebuild_tensor` hook returns, so this library does not link LibTorch.
struct TorchTensor;

// Dictionary keys: Python int or str (str, unicode and bytes keys all land here as bytes).
using PickleKey = std::variant<int64_t, std::string>;

class PickleDict;

// An immutable value tree. Copies are cheap: containers and arrays are shared.
class PickleValue {
 public:
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kString,
    kList,
    kTuple,
    kDict,
    kNdArray,
    kCsrMatrix,
    kClass,   // a class named but never called (PyG's DataEdgeAttr), as "module.name"
    kTensor,  // a torch.save tensor (only with UnpickleOptions::rebuild_tensor)
  };

  PickleValue() = default;  // None
  static PickleValue Bool(bool value);
  static PickleValue Int(int64_t value);
  static PickleValue String(std::string value);  // py2 str, unicode (UTF-8) or bytes
  static PickleValue List(std::vector<PickleValue> items);
  static PickleValue Tuple(std::vector<PickleValue> items);
  static PickleValue Dict(PickleDict dict);  // also collections.defaultdict(list)
  static PickleValue Array(NdArray array);
  static PickleValue Csr(CsrMatrix matrix);
  static PickleValue Class(std::string qualified_name);
  static PickleValue Tensor(std::shared_ptr<const TorchTensor> tensor);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  // Each accessor returns nullptr when the value is of another kind, so that code reading
  // untrusted files checks the kind where it uses the value.
  const bool* as_bool() const;
  const int64_t* as_int() const;
  const std::string* as_string() const;
  const std::vector<PickleValue>* as_list() const;
  const std::vector<PickleValue>* as_tuple() const;
  const PickleDict* as_dict() const;
  const NdArray* as_ndarray() const;
  const CsrMatrix* as_csr() const;
  const std::string* as_class() const;   // "torch_geometric.data.data.DataEdgeAttr"
  const TorchTensor* as_tensor() const;  // complete the type with graph/io/torch_pt.h

 private:
  Kind kind_ = Kind::kNone;
  std::variant<std::monostate, bool, int64_t, std::string,
               std::shared_ptr<const std::vector<PickleValue>>, std::shared_ptr<const PickleDict>,
               std::shared_ptr<const NdArray>, std::shared_ptr<const CsrMatrix>,
               std::shared_ptr<const TorchTensor>>
      value_;
};

// Entries in insertion order; a key set twice keeps its first position and its last value,
// as a Python dict does.
class PickleDict {
 public:
  std::vector<std::pair<PickleKey, PickleValue>> entries;

  // The value under `key`, or nullptr. complexity: O(size).
  const PickleValue* Find(const PickleKey& key) const;
};

// "None", "int", "ndarray", ...: for error messages.
const char* KindName(PickleValue::Kind kind);

struct UnpickleOptions {
  // Deepest container nesting in the result; deeper input (or a reference cycle) is refused.
  int max_depth = 64;
  // Everything materialised (strings, array bytes, containers, result nodes) is charged against
  // memory_factor * input size + 1 MiB bytes, so that shared references cannot blow up a small
  // input. PubMed's adjacency dict, the hungriest real file, needs about 22x.
  int64_t memory_factor = 48;
  // Highest protocol PROTO may declare. 4 also admits FRAME, MEMOIZE and SHORT_BINUNICODE in
  // streams that declare protocol 4: Python 3.8's default for plain values, e.g. OpenFGL's
  // glb_*.pkl lists of node ids.
  int max_protocol = 2;
  // torch.save pickles. When set, the unpickler also accepts BINPERSID storage ids
  // ('storage', torch.{Float,Long,Bool}Storage, key, location, numel), the globals
  // torch._utils._rebuild_tensor_v2 (called with exactly its six torch.save arguments) and
  // collections.OrderedDict (called with no arguments: an empty dict), and hands each rebuilt
  // tensor to this function; what it returns (usually PickleValue::Tensor) takes the tensor's
  // place, and its error, prefixed with the source and byte offset, ends the decoding.
  std::function<absl::StatusOr<PickleValue>(const TorchTensorSpec&)> rebuild_tensor;
  // PyG Data pickles: torch_geometric.data.data.Data and torch_geometric.data.storage.
  // GlobalStorage may be created with NEWOBJ and no arguments and then receive a dict state
  // with BUILD; each reads as that dict (PyG's __setstate__ only copies it into __dict__).
  // A reference back to an enclosing such object (GlobalStorage's `_parent`, a weakref in
  // Python) reads as None. torch_geometric.data.data.DataEdgeAttr and DataTensorAttr may appear
  // as values (Kind::kClass) but never be called.
  bool allow_pyg_data = false;
};

// Decodes one pickle that must span all of `bytes`. `source` (a file name) prefixes every error.
// Accepted opcodes: PROTO (protocol <= max_protocol, first byte only), GLOBAL, (LONG_)BINPUT,
// (LONG_)BINGET, MARK, EMPTY_TUPLE, TUPLE1-3, TUPLE, EMPTY_LIST, APPEND(S), EMPTY_DICT, SETITEM(S),
// (SHORT_)BINSTRING, BINUNICODE, BININT(1,2), NONE, NEWTRUE, NEWFALSE, NEWOBJ, REDUCE, BUILD,
// STOP. Accepted globals: numpy.core.multiarray _reconstruct, numpy ndarray, numpy dtype,
// scipy.sparse.csr / scipy.sparse._csr csr_matrix, collections defaultdict, __builtin__ /
// builtins list; each may only be used the way numpy, scipy and defaultdict(list) pickle.
// The options above add BINPERSID, FRAME, MEMOIZE, SHORT_BINUNICODE and the torch/PyG globals.
// Errors name the byte offset: InvalidArgument for a refused opcode or global or a malformed
// stream, DataLoss for truncation or array bytes that do not match the shape, and
// ResourceExhausted past the depth or memory limits.
absl::StatusOr<PickleValue> Unpickle(absl::string_view bytes, absl::string_view source = "pickle",
                                     const UnpickleOptions& options = {});

// The elements of an integer or bool array in C (row-major) order, whatever `fortran_order`
// says. Float arrays, and u8 values above INT64_MAX, are InvalidArgument.
absl::StatusOr<std::vector<int64_t>> NdArrayToInt64(const NdArray& array);

// The elements in C order as float32 (from f4, f8, integer or bool arrays).
absl::StatusOr<std::vector<float>> NdArrayToFloat(const NdArray& array);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_PICKLE_H_
