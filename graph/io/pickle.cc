#include "graph/io/pickle.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph::io {
namespace {

// Opcodes, named as in Python's pickletools.
constexpr uint8_t kMark = '(';
constexpr uint8_t kStop = '.';
constexpr uint8_t kBinInt = 'J';
constexpr uint8_t kBinInt1 = 'K';
constexpr uint8_t kBinInt2 = 'M';
constexpr uint8_t kNone = 'N';
constexpr uint8_t kBinPersId = 'Q';
constexpr uint8_t kReduce = 'R';
constexpr uint8_t kBinString = 'T';
constexpr uint8_t kShortBinString = 'U';
constexpr uint8_t kBinUnicode = 'X';
constexpr uint8_t kAppend = 'a';
constexpr uint8_t kBuild = 'b';
constexpr uint8_t kGlobal = 'c';
constexpr uint8_t kAppends = 'e';
constexpr uint8_t kBinGet = 'h';
constexpr uint8_t kLongBinGet = 'j';
constexpr uint8_t kBinPut = 'q';
constexpr uint8_t kLongBinPut = 'r';
constexpr uint8_t kSetItem = 's';
constexpr uint8_t kTuple = 't';
constexpr uint8_t kSetItems = 'u';
constexpr uint8_t kEmptyDict = '}';
constexpr uint8_t kEmptyList = ']';
constexpr uint8_t kEmptyTuple = ')';
constexpr uint8_t kProto = 0x80;
constexpr uint8_t kNewObj = 0x81;
constexpr uint8_t kTuple1 = 0x85;
constexpr uint8_t kTuple2 = 0x86;
constexpr uint8_t kTuple3 = 0x87;
constexpr uint8_t kNewTrue = 0x88;
constexpr uint8_t kNewFalse = 0x89;
constexpr uint8_t kShortBinUnicode = 0x8c;
constexpr uint8_t kMemoize = 0x94;
constexpr uint8_t kFrame = 0x95;

// Every opcode of protocols 0-5, so that a refusal says what it saw.
const char* OpcodeName(uint8_t op) {
  switch (op) {
    case '(': return "MARK";
    case '.': return "STOP";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'F': return "FLOAT";
    case 'I': return "INT";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'L': return "LONG";
    case 'M': return "BININT2";
    case 'N': return "NONE";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 'R': return "REDUCE";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";
    case 'X': return "BINUNICODE";
    case 'a': return "APPEND";
    case 'b': return "BUILD";
    case 'c': return "GLOBAL";
    case 'd': return "DICT";
    case '}': return "EMPTY_DICT";
    case 'e': return "APPENDS";
    case 'g': return "GET";
    case 'h': return "BINGET";
    case 'i': return "INST";
    case 'j': return "LONG_BINGET";
    case 'l': return "LIST";
    case ']': return "EMPTY_LIST";
    case 'o': return "OBJ";
    case 'p': return "PUT";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 's': return "SETITEM";
    case 't': return "TUPLE";
    case ')': return "EMPTY_TUPLE";
    case 'u': return "SETITEMS";
    case 'G': return "BINFLOAT";
    case 'B': return "BINBYTES";
    case 'C': return "SHORT_BINBYTES";
    case 0x80: return "PROTO";
    case 0x81: return "NEWOBJ";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 0x8c: return "SHORT_BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 0x8e: return "BINBYTES8";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX";
    case 0x93: return "STACK_GLOBAL";
    case 0x94: return "MEMOIZE";
    case 0x95: return "FRAME";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return "unknown";
  }
}

enum class Global {
  kReconstruct,
  kNdarray,
  kDtype,
  kCsrMatrix,
  kDefaultDict,
  kList,
  // torch.save (UnpickleOptions::rebuild_tensor)
  kRebuildTensorV2,
  kFloatStorage,
  kLongStorage,
  kBoolStorage,
  kOrderedDict,
  // PyG (UnpickleOptions::allow_pyg_data)
  kPygData,
  kPygGlobalStorage,
  kPygDataEdgeAttr,
  kPygDataTensorAttr,
};

// Which option admits a global: numpy/scipy always, the others only when asked for.
enum class GlobalGroup { kNumpy, kTorch, kPyg };

struct AllowedGlobal {
  const char* module_and_name;
  Global global;
  GlobalGroup group;
};
constexpr AllowedGlobal kAllowedGlobals[] = {
    {"numpy.core.multiarray _reconstruct", Global::kReconstruct, GlobalGroup::kNumpy},
    {"numpy ndarray", Global::kNdarray, GlobalGroup::kNumpy},
    {"numpy dtype", Global::kDtype, GlobalGroup::kNumpy},
    {"scipy.sparse.csr csr_matrix", Global::kCsrMatrix, GlobalGroup::kNumpy},
    {"scipy.sparse._csr csr_matrix", Global::kCsrMatrix, GlobalGroup::kNumpy},
    {"collections defaultdict", Global::kDefaultDict, GlobalGroup::kNumpy},
    {"__builtin__ list", Global::kList, GlobalGroup::kNumpy},
    {"builtins list", Global::kList, GlobalGroup::kNumpy},
    {"torch._utils _rebuild_tensor_v2", Global::kRebuildTensorV2, GlobalGroup::kTorch},
    {"torch FloatStorage", Global::kFloatStorage, GlobalGroup::kTorch},
    {"torch LongStorage", Global::kLongStorage, GlobalGroup::kTorch},
    {"torch BoolStorage", Global::kBoolStorage, GlobalGroup::kTorch},
    {"collections OrderedDict", Global::kOrderedDict, GlobalGroup::kTorch},
    {"torch_geometric.data.data Data", Global::kPygData, GlobalGroup::kPyg},
    {"torch_geometric.data.storage GlobalStorage", Global::kPygGlobalStorage, GlobalGroup::kPyg},
    {"torch_geometric.data.data DataEdgeAttr", Global::kPygDataEdgeAttr, GlobalGroup::kPyg},
    {"torch_geometric.data.data DataTensorAttr", Global::kPygDataTensorAttr, GlobalGroup::kPyg},
};

const char* GlobalName(Global g) {
  switch (g) {
    case Global::kReconstruct: return "numpy.core.multiarray _reconstruct";
    case Global::kNdarray: return "numpy ndarray";
    case Global::kDtype: return "numpy dtype";
    case Global::kCsrMatrix: return "scipy.sparse csr_matrix";
    case Global::kDefaultDict: return "collections defaultdict";
    case Global::kList: return "list";
    case Global::kRebuildTensorV2: return "torch._utils _rebuild_tensor_v2";
    case Global::kFloatStorage: return "torch FloatStorage";
    case Global::kLongStorage: return "torch LongStorage";
    case Global::kBoolStorage: return "torch BoolStorage";
    case Global::kOrderedDict: return "collections OrderedDict";
    case Global::kPygData: return "torch_geometric.data.data Data";
    case Global::kPygGlobalStorage: return "torch_geometric.data.storage GlobalStorage";
    case Global::kPygDataEdgeAttr: return "torch_geometric.data.data DataEdgeAttr";
    case Global::kPygDataTensorAttr: return "torch_geometric.data.data DataTensorAttr";
  }
  return "?";
}

// The storage class name torch.save writes, as TorchTensorSpec::storage_type; null otherwise.
const char* StorageTypeName(Global g) {
  switch (g) {
    case Global::kFloatStorage: return "FloatStorage";
    case Global::kLongStorage: return "LongStorage";
    case Global::kBoolStorage: return "BoolStorage";
    default: return nullptr;
  }
}

// A stack slot or container item: scalars inline, everything else an index into the arena of
// its tag. Objects live in arenas (not in shared pointers) so that reference cycles cannot leak
// and mutation through the memo (APPENDS after BINPUT) is seen by every reference, as in Python.
enum class Tag : uint8_t {
  kNone,
  kBool,
  kInt,
  kString,
  kList,
  kTuple,
  kDict,
  kGlobal,
  kArray,
  kDtype,
  kCsr,
  kStorage,  // a torch.save persistent id
  kObject,   // a PyG Data or GlobalStorage
  kValue,    // what UnpickleOptions::rebuild_tensor returned
};
struct Ref {
  Tag tag = Tag::kNone;
  int64_t v = 0;
};

const char* TagName(Tag t) {
  switch (t) {
    case Tag::kNone: return "None";
    case Tag::kBool: return "bool";
    case Tag::kInt: return "int";
    case Tag::kString: return "str";
    case Tag::kList: return "list";
    case Tag::kTuple: return "tuple";
    case Tag::kDict: return "dict";
    case Tag::kGlobal: return "global";
    case Tag::kArray: return "ndarray";
    case Tag::kDtype: return "dtype";
    case Tag::kCsr: return "csr_matrix";
    case Tag::kStorage: return "storage";
    case Tag::kObject: return "PyG object";
    case Tag::kValue: return "tensor";
  }
  return "?";
}

struct DictObject {
  std::vector<std::pair<Ref, Ref>> entries;
  absl::flat_hash_map<std::string, size_t> index;  // KeyBytes(key) -> position in entries
};
struct ArrayObject {
  bool built = false;
  NdArray array;
};
struct DtypeObject {
  std::string name;  // "i4"
  char order = 0;    // set by BUILD
};
struct CsrObject {
  bool built = false;
  CsrMatrix matrix;
};
struct StorageObject {
  Global type;
  std::string key, location;
  int64_t numel = 0;
};
// A PyG Data or GlobalStorage: its class and, after BUILD, the dict it was given.
struct PygObject {
  Global cls;
  int64_t state = -1;  // index into dicts_
};

// Approximate heap bytes per materialised thing, for the memory budget.
constexpr int64_t kObjectBytes = 48;
constexpr int64_t kRefBytes = sizeof(Ref);
constexpr int64_t kDictEntryBytes = 2 * sizeof(Ref) + 64;
constexpr int64_t kMemoEntryBytes = 32;
constexpr size_t kMaxGlobalLine = 128;
constexpr int kMaxArrayDims = 32;  // numpy's NPY_MAXDIMS
constexpr int kMaxTensorDims = 64;  // far above any real tensor; bounds the spec's vectors

bool ValidDtypeName(absl::string_view name) {
  static constexpr const char* kNames[] = {"b1", "i1", "i2", "i4", "i8", "u1",
                                           "u2", "u4", "u8", "f4", "f8"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

class Unpickler {
 public:
  Unpickler(absl::string_view in, absl::string_view source, const UnpickleOptions& options)
      : in_(in), source_(source), options_(options) {
    const int64_t factor = std::max<int64_t>(options.memory_factor, 1);
    const int64_t size = static_cast<int64_t>(in.size());
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    budget_ =
        size > (kMax - (int64_t{1} << 20)) / factor ? kMax : factor * size + (int64_t{1} << 20);
  }

  absl::StatusOr<PickleValue> Run();

 private:
  absl::Status Invalid(absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": byte ", op_at_, ": ", OpcodeName(op_), ": ", message));
  }
  absl::Status Unsupported() const {
    return Invalid(absl::StrCat("opcode 0x", absl::Hex(op_, absl::kZeroPad2),
                                " is not supported by this restricted unpickler"));
  }
  absl::Status Truncated() const {
    return absl::DataLossError(absl::StrCat(source_, ": truncated at byte ", in_.size(), " (",
                                            OpcodeName(op_), " at byte ", op_at_,
                                            " needs more bytes)"));
  }
  absl::Status Charge(int64_t bytes) {
    used_ += bytes;
    if (used_ <= budget_) return absl::OkStatus();
    return absl::ResourceExhaustedError(absl::StrCat(
        source_, ": byte ", op_at_, ": decoding needs more than ", budget_, " bytes of memory (",
        options_.memory_factor, " x the input size + 1 MiB); shared references expand too far"));
  }

  // Bounded reads: each fails with Truncated() rather than read past the end.
  absl::Status Take(size_t n, absl::string_view* out) {
    if (n > in_.size() - pos_) return Truncated();
    *out = in_.substr(pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> ReadLittle(size_t n) {
    absl::string_view b;
    FGL_RETURN_IF_ERROR(Take(n, &b));
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(b[i])} << (8 * i);
    return v;
  }
  absl::StatusOr<std::string> ReadLine() {
    const size_t limit = std::min(in_.size(), pos_ + kMaxGlobalLine + 1);
    for (size_t i = pos_; i < limit; ++i) {
      if (in_[i] == '\n') {
        std::string line(in_.substr(pos_, i - pos_));
        pos_ = i + 1;
        return line;
      }
    }
    if (limit == in_.size()) return Truncated();
    return Invalid(absl::StrCat("a line longer than ", kMaxGlobalLine, " bytes"));
  }

  void Push(Ref r) { stack_.push_back(r); }
  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }
  absl::StatusOr<Ref> Pop() {
    if (stack_.size() <= Floor()) {
      return Invalid(marks_.empty() ? "stack underflow" : "stack underflow (only a MARK is left)");
    }
    Ref r = stack_.back();
    stack_.pop_back();
    return r;
  }
  absl::StatusOr<Ref> Top() const {
    if (stack_.size() <= Floor()) return Invalid("stack underflow");
    return stack_.back();
  }
  absl::StatusOr<std::vector<Ref>> PopMark() {
    if (marks_.empty()) return Invalid("no MARK on the stack");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Ref> items(stack_.begin() + mark, stack_.end());
    stack_.resize(mark);
    return items;
  }

  absl::StatusOr<Ref> NewString(absl::string_view bytes) {
    FGL_RETURN_IF_ERROR(Charge(static_cast<int64_t>(bytes.size()) + kObjectBytes));
    strings_.emplace_back(bytes);
    return Ref{Tag::kString, static_cast<int64_t>(strings_.size() - 1)};
  }
  absl::StatusOr<Ref> NewTuple(std::vector<Ref> items) {
    FGL_RETURN_IF_ERROR(Charge(kObjectBytes + kRefBytes * static_cast<int64_t>(items.size())));
    tuples_.push_back(std::move(items));
    return Ref{Tag::kTuple, static_cast<int64_t>(tuples_.size() - 1)};
  }

  bool Enabled(GlobalGroup group) const {
    switch (group) {
      case GlobalGroup::kNumpy: return true;
      case GlobalGroup::kTorch: return static_cast<bool>(options_.rebuild_tensor);
      case GlobalGroup::kPyg: return options_.allow_pyg_data;
    }
    return false;
  }

  absl::Status SetItem(DictObject& dict, Ref key, Ref value);
  absl::Status Reduce(Ref callable, Ref args);
  absl::Status PersistentId(Ref pid);
  absl::Status RebuildTensor(const std::vector<Ref>& args);
  absl::StatusOr<std::vector<int64_t>> IntTuple(Ref r, absl::string_view what);
  absl::Status BuildDtype(DtypeObject& dtype, Ref state);
  absl::Status BuildArray(ArrayObject& array, Ref state);
  absl::Status BuildCsr(CsrObject& csr, Ref state);
  absl::StatusOr<const NdArray*> CsrArray(const DictObject& dict, const std::string& name);
  absl::StatusOr<PickleValue> Convert(Ref r, int depth);
  absl::Status Step();

  absl::string_view in_;
  std::string source_;
  UnpickleOptions options_;
  int64_t budget_ = 0, used_ = 0;
  size_t pos_ = 0, op_at_ = 0;
  uint8_t op_ = 0;
  int protocol_ = 0;
  bool stopped_ = false;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  absl::flat_hash_map<uint32_t, Ref> memo_;
  std::vector<std::string> strings_;
  std::vector<std::vector<Ref>> lists_, tuples_;
  std::vector<DictObject> dicts_;
  std::vector<ArrayObject> arrays_;
  std::vector<DtypeObject> dtypes_;
  std::vector<CsrObject> csrs_;
  std::vector<StorageObject> storages_;
  std::vector<PygObject> objects_;
  std::vector<bool> converting_;  // objects_[i] is being converted (cycle cut)
  std::vector<PickleValue> values_;
};

std::string KeyBytes(Ref key, const std::vector<std::string>& strings) {
  if (key.tag == Tag::kInt) return absl::StrCat("i", key.v);
  return absl::StrCat("s", strings[key.v]);
}

absl::Status Unpickler::SetItem(DictObject& dict, Ref key, Ref value) {
  if (key.tag != Tag::kInt && key.tag != Tag::kString) {
    return Invalid(absl::StrCat("dict key must be an int or str, not ", TagName(key.tag)));
  }
  std::string k = KeyBytes(key, strings_);
  auto it = dict.index.find(k);
  if (it != dict.index.end()) {
    dict.entries[it->second].second = value;
    return absl::OkStatus();
  }
  FGL_RETURN_IF_ERROR(Charge(kDictEntryBytes + static_cast<int64_t>(k.size())));
  dict.index.emplace(std::move(k), dict.entries.size());
  dict.entries.emplace_back(key, value);
  return absl::OkStatus();
}

absl::Status Unpickler::Reduce(Ref callable, Ref args_ref) {
  if (callable.tag != Tag::kGlobal) {
    return Invalid(absl::StrCat("cannot call a ", TagName(callable.tag)));
  }
  const Global g = static_cast<Global>(callable.v);
  if (args_ref.tag != Tag::kTuple) {
    return Invalid(absl::StrCat("arguments of '", GlobalName(g), "' must be a tuple, not ",
                                TagName(args_ref.tag)));
  }
  const std::vector<Ref>& args = tuples_[args_ref.v];
  switch (g) {
    case Global::kReconstruct: {
      // numpy pickles `_reconstruct(ndarray, (0,), 'b')`; the real shape comes with BUILD.
      if (args.size() != 3 || args[0].tag != Tag::kGlobal ||
          static_cast<Global>(args[0].v) != Global::kNdarray || args[1].tag != Tag::kTuple ||
          args[2].tag != Tag::kString) {
        return Invalid("_reconstruct takes (numpy ndarray, shape tuple, str)");
      }
      FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
      arrays_.emplace_back();
      Push(Ref{Tag::kArray, static_cast<int64_t>(arrays_.size() - 1)});
      return absl::OkStatus();
    }
    case Global::kDtype: {
      if (args.size() != 3 || args[0].tag != Tag::kString || args[1].tag != Tag::kInt ||
          args[2].tag != Tag::kInt) {
        return Invalid("dtype takes (str, int, int)");
      }
      const std::string& name = strings_[args[0].v];
      if (!ValidDtypeName(name)) {
        return Invalid(absl::StrCat("dtype '", absl::CHexEscape(name),
                                    "' is not supported (only b1, i1-i8, u1-u8, f4, f8)"));
      }
      FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
      dtypes_.push_back(DtypeObject{name, 0});
      Push(Ref{Tag::kDtype, static_cast<int64_t>(dtypes_.size() - 1)});
      return absl::OkStatus();
    }
    case Global::kDefaultDict: {
      if (args.size() != 1 || args[0].tag != Tag::kGlobal ||
          static_cast<Global>(args[0].v) != Global::kList) {
        return Invalid("only defaultdict(list) is allowed");
      }
      FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
      dicts_.emplace_back();
      Push(Ref{Tag::kDict, static_cast<int64_t>(dicts_.size() - 1)});
      return absl::OkStatus();
    }
    case Global::kRebuildTensorV2: return RebuildTensor(args);
    case Global::kOrderedDict: {
      // torch.save writes the tensor's backward hooks as OrderedDict(); items would follow with
      // SETITEMS, as for any dict.
      if (!args.empty()) return Invalid("only OrderedDict() without arguments is allowed");
      FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
      dicts_.emplace_back();
      Push(Ref{Tag::kDict, static_cast<int64_t>(dicts_.size() - 1)});
      return absl::OkStatus();
    }
    default: return Invalid(absl::StrCat("calling '", GlobalName(g), "' is not allowed"));
  }
}

absl::Status Unpickler::PersistentId(Ref pid) {
  // torch.save's persistent id: ('storage', storage class, key, location, numel).
  if (pid.tag != Tag::kTuple) {
    return Invalid(absl::StrCat("a persistent id must be a tuple, not ", TagName(pid.tag)));
  }
  const std::vector<Ref>& t = tuples_[pid.v];
  if (t.size() != 5 || t[0].tag != Tag::kString || strings_[t[0].v] != "storage" ||
      t[1].tag != Tag::kGlobal || StorageTypeName(static_cast<Global>(t[1].v)) == nullptr ||
      t[2].tag != Tag::kString || t[3].tag != Tag::kString || t[4].tag != Tag::kInt) {
    return Invalid(
        "a persistent id must be ('storage', torch.{Float,Long,Bool}Storage, key, location, "
        "numel)");
  }
  if (t[4].v < 0) return Invalid(absl::StrCat("storage numel ", t[4].v, " is negative"));
  FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
  storages_.push_back(StorageObject{static_cast<Global>(t[1].v), strings_[t[2].v],
                                    strings_[t[3].v], t[4].v});
  Push(Ref{Tag::kStorage, static_cast<int64_t>(storages_.size() - 1)});
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> Unpickler::IntTuple(Ref r, absl::string_view what) {
  if (r.tag != Tag::kTuple) return Invalid(absl::StrCat("tensor ", what, " must be a tuple"));
  const std::vector<Ref>& t = tuples_[r.v];
  if (t.size() > kMaxTensorDims) {
    return Invalid(absl::StrCat("tensor ", what, " has ", t.size(), " entries (at most ",
                                kMaxTensorDims, ")"));
  }
  std::vector<int64_t> out;
  for (const Ref& d : t) {
    if (d.tag != Tag::kInt || d.v < 0) {
      return Invalid(absl::StrCat("tensor ", what, " entries must be ints >= 0"));
    }
    out.push_back(d.v);
  }
  return out;
}

absl::Status Unpickler::RebuildTensor(const std::vector<Ref>& args) {
  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks),
  // exactly as torch.save writes it; newer torch may add a seventh (metadata) argument, which
  // we have never seen in these files and refuse.
  if (args.size() != 6 || args[0].tag != Tag::kStorage || args[1].tag != Tag::kInt ||
      args[4].tag != Tag::kBool || args[5].tag != Tag::kDict) {
    return Invalid(
        "_rebuild_tensor_v2 takes (storage, int offset, size tuple, stride tuple, bool, "
        "OrderedDict())");
  }
  if (!dicts_[args[5].v].entries.empty()) return Invalid("tensor backward hooks must be empty");
  if (args[1].v < 0) return Invalid(absl::StrCat("tensor offset ", args[1].v, " is negative"));
  const StorageObject& storage = storages_[args[0].v];
  TorchTensorSpec spec;
  spec.storage_type = StorageTypeName(storage.type);
  spec.storage_key = storage.key;
  spec.location = storage.location;
  spec.storage_numel = storage.numel;
  spec.offset = args[1].v;
  FGL_ASSIGN_OR_RETURN(spec.size, IntTuple(args[2], "size"));
  FGL_ASSIGN_OR_RETURN(spec.stride, IntTuple(args[3], "stride"));
  if (spec.size.size() != spec.stride.size()) {
    return Invalid(absl::StrCat("tensor size has ", spec.size.size(), " dimensions, stride ",
                                spec.stride.size()));
  }
  spec.requires_grad = args[4].v != 0;
  absl::StatusOr<PickleValue> value = options_.rebuild_tensor(spec);
  if (!value.ok()) {
    return absl::Status(value.status().code(), absl::StrCat(source_, ": byte ", op_at_, ": ",
                                                            value.status().message()));
  }
  FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
  values_.push_back(*std::move(value));
  Push(Ref{Tag::kValue, static_cast<int64_t>(values_.size() - 1)});
  return absl::OkStatus();
}

absl::Status Unpickler::BuildDtype(DtypeObject& dtype, Ref state_ref) {
  if (dtype.order != 0) return Invalid("BUILD twice on one dtype");
  // numpy's dtype state: (3, byteorder, subarray, names, fields, elsize, alignment, flags),
  // version 4 appends metadata.
  if (state_ref.tag != Tag::kTuple) return Invalid("dtype state must be a tuple");
  const std::vector<Ref>& st = tuples_[state_ref.v];
  if (st.size() < 8 || st.size() > 9 || st[0].tag != Tag::kInt ||
      st[0].v != int64_t(st.size()) - 5) {
    return Invalid("dtype state must be (3, order, None, None, None, int, int, int)");
  }
  if (st[1].tag != Tag::kString || strings_[st[1].v].size() != 1) {
    return Invalid("dtype byte order must be a one-character str");
  }
  if (st[2].tag != Tag::kNone || st[3].tag != Tag::kNone || st[4].tag != Tag::kNone) {
    return Invalid("structured and sub-array dtypes are not supported");
  }
  for (size_t i = 5; i < 8; ++i) {
    if (st[i].tag != Tag::kInt) return Invalid("dtype elsize/alignment/flags must be ints");
  }
  if (st.size() == 9 && st[8].tag != Tag::kNone) return Invalid("dtype metadata is not supported");
  const char order = strings_[st[1].v][0];
  const bool single_byte = dtype.name.back() == '1';
  if (order == '|' || single_byte) {
    if (!single_byte) return Invalid(absl::StrCat("dtype ", dtype.name, " needs a byte order"));
    dtype.order = '|';
  } else if (order == '<' || order == '>') {
    dtype.order = order;
  } else {
    return Invalid(absl::StrCat("dtype byte order '", absl::CHexEscape(std::string(1, order)),
                                "' is not one of < > |"));
  }
  return absl::OkStatus();
}

absl::Status Unpickler::BuildArray(ArrayObject& array, Ref state_ref) {
  if (array.built) return Invalid("BUILD twice on one ndarray");
  // ndarray state: ([version,] shape, dtype, is_fortran, raw bytes).
  if (state_ref.tag != Tag::kTuple) return Invalid("ndarray state must be a tuple");
  std::vector<Ref> st = tuples_[state_ref.v];
  if (st.size() == 5) {
    if (st[0].tag != Tag::kInt || st[0].v != 1) return Invalid("ndarray state version must be 1");
    st.erase(st.begin());
  }
  if (st.size() != 4) return Invalid("ndarray state must be (1, shape, dtype, is_fortran, bytes)");
  if (st[0].tag != Tag::kTuple) return Invalid("ndarray shape must be a tuple");
  const std::vector<Ref>& dims = tuples_[st[0].v];
  if (dims.size() > kMaxArrayDims) {
    return Invalid(
        absl::StrCat("ndarray has ", dims.size(), " dimensions (at most ", kMaxArrayDims, ")"));
  }
  NdArray out;
  int64_t count = 1;
  for (const Ref& d : dims) {
    if (d.tag != Tag::kInt || d.v < 0) return Invalid("ndarray shape entries must be ints >= 0");
    if (d.v != 0 && count > std::numeric_limits<int64_t>::max() / d.v) {
      return Invalid("ndarray shape product overflows int64");
    }
    count *= d.v;
    out.shape.push_back(d.v);
  }
  if (st[1].tag != Tag::kDtype) {
    return Invalid(absl::StrCat("ndarray dtype is a ", TagName(st[1].tag)));
  }
  const DtypeObject& dtype = dtypes_[st[1].v];
  if (dtype.order == 0) return Invalid("ndarray dtype never received its state (BUILD)");
  out.dtype = absl::StrCat(std::string(1, dtype.order), dtype.name);
  if (st[2].tag == Tag::kBool || (st[2].tag == Tag::kInt && (st[2].v == 0 || st[2].v == 1))) {
    out.fortran_order = st[2].v != 0;
  } else {
    return Invalid("ndarray is_fortran must be a bool");
  }
  if (st[3].tag != Tag::kString) {
    return Invalid(absl::StrCat("ndarray data must be a str, not ", TagName(st[3].tag),
                                " (object arrays are not supported)"));
  }
  const std::string& raw = strings_[st[3].v];
  const int64_t itemsize = out.itemsize();
  if (count > std::numeric_limits<int64_t>::max() / itemsize ||
      static_cast<int64_t>(raw.size()) != count * itemsize) {
    return absl::DataLossError(absl::StrCat(source_, ": byte ", op_at_, ": ndarray of shape (",
                                            absl::StrJoin(out.shape, ", "), ") and dtype ",
                                            out.dtype, " needs ", count, " x ", itemsize,
                                            " bytes but holds ", raw.size()));
  }
  FGL_RETURN_IF_ERROR(Charge(static_cast<int64_t>(raw.size())));
  out.data = raw;
  array.array = std::move(out);
  array.built = true;
  return absl::OkStatus();
}

absl::StatusOr<const NdArray*> Unpickler::CsrArray(const DictObject& dict,
                                                   const std::string& name) {
  auto it = dict.index.find(absl::StrCat("s", name));
  if (it == dict.index.end()) return Invalid(absl::StrCat("csr_matrix state has no '", name, "'"));
  const Ref r = dict.entries[it->second].second;
  if (r.tag != Tag::kArray || !arrays_[r.v].built) {
    return Invalid(absl::StrCat("csr_matrix '", name, "' is not an ndarray"));
  }
  const NdArray& a = arrays_[r.v].array;
  if (a.shape.size() != 1) {
    return Invalid(
        absl::StrCat("csr_matrix '", name, "' must be 1-D, has ", a.shape.size(), " dimensions"));
  }
  if (name != "data" && a.dtype[1] != 'i' && a.dtype[1] != 'u') {
    return Invalid(absl::StrCat("csr_matrix '", name, "' must be integer, is ", a.dtype));
  }
  return &a;
}

absl::Status Unpickler::BuildCsr(CsrObject& csr, Ref state_ref) {
  if (csr.built) return Invalid("BUILD twice on one csr_matrix");
  if (state_ref.tag != Tag::kDict) return Invalid("csr_matrix state must be a dict");
  const DictObject& dict = dicts_[state_ref.v];
  if (auto it = dict.index.find("sformat"); it != dict.index.end()) {
    const Ref f = dict.entries[it->second].second;
    if (f.tag != Tag::kString || strings_[f.v] != "csr") {
      return Invalid("csr_matrix state has a 'format' other than 'csr'");
    }
  }
  auto shape_it = dict.index.find("s_shape");
  if (shape_it == dict.index.end()) shape_it = dict.index.find("sshape");
  if (shape_it == dict.index.end()) return Invalid("csr_matrix state has no '_shape'");
  const Ref shape = dict.entries[shape_it->second].second;
  if (shape.tag != Tag::kTuple || tuples_[shape.v].size() != 2 ||
      tuples_[shape.v][0].tag != Tag::kInt || tuples_[shape.v][1].tag != Tag::kInt ||
      tuples_[shape.v][0].v < 0 || tuples_[shape.v][1].v < 0) {
    return Invalid("csr_matrix '_shape' must be a pair of ints >= 0");
  }
  CsrMatrix m;
  m.num_rows = tuples_[shape.v][0].v;
  m.num_cols = tuples_[shape.v][1].v;
  FGL_ASSIGN_OR_RETURN(const NdArray* indptr, CsrArray(dict, "indptr"));
  FGL_ASSIGN_OR_RETURN(const NdArray* indices, CsrArray(dict, "indices"));
  FGL_ASSIGN_OR_RETURN(const NdArray* data, CsrArray(dict, "data"));
  if (indptr->shape[0] - 1 != m.num_rows) {
    return Invalid(absl::StrCat("csr_matrix indptr has ", indptr->shape[0], " entries for ",
                                m.num_rows, " rows"));
  }
  if (indices->shape[0] != data->shape[0]) {
    return Invalid(absl::StrCat("csr_matrix has ", indices->shape[0], " indices but ",
                                data->shape[0], " values"));
  }
  const int64_t bytes =
      static_cast<int64_t>(indptr->data.size() + indices->data.size() + data->data.size());
  FGL_RETURN_IF_ERROR(Charge(bytes));
  m.indptr = *indptr;
  m.indices = *indices;
  m.data = *data;
  csr.matrix = std::move(m);
  csr.built = true;
  return absl::OkStatus();
}

absl::Status Unpickler::Step() {
  op_at_ = pos_;
  op_ = static_cast<uint8_t>(in_[pos_++]);
  switch (op_) {
    case kProto: {
      FGL_ASSIGN_OR_RETURN(uint64_t v, ReadLittle(1));
      if (op_at_ != 0) return Invalid("PROTO is only allowed as the first opcode");
      if (v > static_cast<uint64_t>(options_.max_protocol)) {
        return Invalid(absl::StrCat("protocol ", v, " is not supported (only 0-",
                                    options_.max_protocol, ")"));
      }
      protocol_ = static_cast<int>(v);
      return absl::OkStatus();
    }
    case kGlobal: {
      FGL_ASSIGN_OR_RETURN(std::string module, ReadLine());
      FGL_ASSIGN_OR_RETURN(std::string name, ReadLine());
      const std::string full = absl::StrCat(module, " ", name);
      for (const AllowedGlobal& a : kAllowedGlobals) {
        if (full == a.module_and_name && Enabled(a.group)) {
          Push(Ref{Tag::kGlobal, static_cast<int64_t>(a.global)});
          return absl::OkStatus();
        }
      }
      std::vector<std::string> allowed;
      for (const AllowedGlobal& a : kAllowedGlobals) {
        if (Enabled(a.group)) allowed.push_back(a.module_and_name);
      }
      return Invalid(absl::StrCat("global '", absl::CHexEscape(full), "' is not allowed (only ",
                                  absl::StrJoin(allowed, ", "), ")"));
    }
    case kBinPut:
    case kLongBinPut: {
      FGL_ASSIGN_OR_RETURN(uint64_t idx, ReadLittle(op_ == kBinPut ? 1 : 4));
      FGL_ASSIGN_OR_RETURN(Ref top, Top());
      auto [it, inserted] = memo_.insert_or_assign(static_cast<uint32_t>(idx), top);
      if (inserted) return Charge(kMemoEntryBytes);
      return absl::OkStatus();
    }
    case kMemoize: {
      if (protocol_ < 4) return Unsupported();
      // Protocol 4's implicit index: the memo's current size, as in CPython.
      FGL_ASSIGN_OR_RETURN(Ref top, Top());
      if (memo_.size() >= std::numeric_limits<uint32_t>::max()) return Invalid("memo is full");
      auto [it, inserted] = memo_.insert_or_assign(static_cast<uint32_t>(memo_.size()), top);
      if (inserted) return Charge(kMemoEntryBytes);
      return absl::OkStatus();
    }
    case kFrame: {
      if (protocol_ < 4) return Unsupported();
      // A frame only tells a streaming reader how much to buffer; we hold all bytes already.
      FGL_ASSIGN_OR_RETURN(uint64_t len, ReadLittle(8));
      if (len > in_.size() - pos_) return Truncated();
      return absl::OkStatus();
    }
    case kBinPersId: {
      if (!options_.rebuild_tensor) return Unsupported();
      FGL_ASSIGN_OR_RETURN(Ref pid, Pop());
      return PersistentId(pid);
    }
    case kBinGet:
    case kLongBinGet: {
      FGL_ASSIGN_OR_RETURN(uint64_t idx, ReadLittle(op_ == kBinGet ? 1 : 4));
      auto it = memo_.find(static_cast<uint32_t>(idx));
      if (it == memo_.end()) return Invalid(absl::StrCat("memo index ", idx, " was never stored"));
      Push(it->second);
      return absl::OkStatus();
    }
    case kMark:
      marks_.push_back(stack_.size());
      return absl::OkStatus();
    case kEmptyTuple:
    case kTuple1:
    case kTuple2:
    case kTuple3:
    case kTuple: {
      std::vector<Ref> items;
      if (op_ == kTuple) {
        FGL_ASSIGN_OR_RETURN(std::vector<Ref> popped, PopMark());
        items = std::move(popped);
      } else {
        const int n = op_ == kEmptyTuple ? 0 : op_ - kTuple1 + 1;
        items.resize(n);
        for (int i = n - 1; i >= 0; --i) {
          FGL_ASSIGN_OR_RETURN(Ref r, Pop());
          items[i] = r;
        }
      }
      FGL_ASSIGN_OR_RETURN(Ref t, NewTuple(std::move(items)));
      Push(t);
      return absl::OkStatus();
    }
    case kEmptyList:
      FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
      lists_.emplace_back();
      Push(Ref{Tag::kList, static_cast<int64_t>(lists_.size() - 1)});
      return absl::OkStatus();
    case kAppend:
    case kAppends: {
      std::vector<Ref> items;
      if (op_ == kAppend) {
        FGL_ASSIGN_OR_RETURN(Ref r, Pop());
        items.push_back(r);
      } else {
        FGL_ASSIGN_OR_RETURN(std::vector<Ref> popped, PopMark());
        items = std::move(popped);
      }
      FGL_ASSIGN_OR_RETURN(Ref target, Top());
      if (target.tag != Tag::kList) {
        return Invalid(absl::StrCat("cannot append to a ", TagName(target.tag)));
      }
      FGL_RETURN_IF_ERROR(Charge(kRefBytes * static_cast<int64_t>(items.size())));
      std::vector<Ref>& list = lists_[target.v];
      list.insert(list.end(), items.begin(), items.end());
      return absl::OkStatus();
    }
    case kEmptyDict:
      FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
      dicts_.emplace_back();
      Push(Ref{Tag::kDict, static_cast<int64_t>(dicts_.size() - 1)});
      return absl::OkStatus();
    case kSetItem:
    case kSetItems: {
      std::vector<Ref> items(2);
      if (op_ == kSetItem) {
        for (int i = 1; i >= 0; --i) {
          FGL_ASSIGN_OR_RETURN(Ref r, Pop());
          items[i] = r;
        }
      } else {
        FGL_ASSIGN_OR_RETURN(std::vector<Ref> popped, PopMark());
        items = std::move(popped);
        if (items.size() % 2 != 0) {
          return Invalid(
              absl::StrCat("odd number of items (", items.size(), ") for key/value pairs"));
        }
      }
      FGL_ASSIGN_OR_RETURN(Ref target, Top());
      if (target.tag != Tag::kDict) {
        return Invalid(absl::StrCat("cannot set items on a ", TagName(target.tag)));
      }
      for (size_t i = 0; i < items.size(); i += 2) {
        FGL_RETURN_IF_ERROR(SetItem(dicts_[target.v], items[i], items[i + 1]));
      }
      return absl::OkStatus();
    }
    case kShortBinUnicode:
      if (protocol_ < 4) return Unsupported();
      [[fallthrough]];
    case kShortBinString:
    case kBinString:
    case kBinUnicode: {
      const bool short_len = op_ == kShortBinString || op_ == kShortBinUnicode;
      FGL_ASSIGN_OR_RETURN(uint64_t len, ReadLittle(short_len ? 1 : 4));
      if (op_ == kBinString && len > uint64_t{std::numeric_limits<int32_t>::max()}) {
        return Invalid("negative string length");
      }
      absl::string_view bytes;
      FGL_RETURN_IF_ERROR(Take(len, &bytes));
      FGL_ASSIGN_OR_RETURN(Ref r, NewString(bytes));
      Push(r);
      return absl::OkStatus();
    }
    case kBinInt:
    case kBinInt1:
    case kBinInt2: {
      const size_t n = op_ == kBinInt ? 4 : op_ == kBinInt1 ? 1 : 2;
      FGL_ASSIGN_OR_RETURN(uint64_t v, ReadLittle(n));
      const int64_t value = op_ == kBinInt ? int64_t{static_cast<int32_t>(static_cast<uint32_t>(v))}
                                           : static_cast<int64_t>(v);
      Push(Ref{Tag::kInt, value});
      return absl::OkStatus();
    }
    case kNone:
      Push(Ref{Tag::kNone, 0});
      return absl::OkStatus();
    case kNewTrue:
    case kNewFalse:
      Push(Ref{Tag::kBool, op_ == kNewTrue ? 1 : 0});
      return absl::OkStatus();
    case kNewObj: {
      FGL_ASSIGN_OR_RETURN(Ref args, Pop());
      FGL_ASSIGN_OR_RETURN(Ref cls, Pop());
      const Global g = static_cast<Global>(cls.v);
      if (cls.tag == Tag::kGlobal && (g == Global::kPygData || g == Global::kPygGlobalStorage)) {
        if (args.tag != Tag::kTuple || !tuples_[args.v].empty()) {
          return Invalid(absl::StrCat(GlobalName(g), ".__new__ takes no arguments here"));
        }
        FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
        objects_.push_back(PygObject{g, -1});
        converting_.push_back(false);
        Push(Ref{Tag::kObject, static_cast<int64_t>(objects_.size() - 1)});
        return absl::OkStatus();
      }
      if (cls.tag != Tag::kGlobal || g != Global::kCsrMatrix) {
        return Invalid(absl::StrCat(
            "only scipy.sparse csr_matrix",
            options_.allow_pyg_data ? " and PyG Data/GlobalStorage" : "",
            " may be created, not ",
            cls.tag == Tag::kGlobal ? absl::StrCat("'", GlobalName(static_cast<Global>(cls.v)), "'")
                                    : std::string(TagName(cls.tag))));
      }
      if (args.tag != Tag::kTuple || !tuples_[args.v].empty()) {
        return Invalid("csr_matrix.__new__ takes no arguments");
      }
      FGL_RETURN_IF_ERROR(Charge(kObjectBytes));
      csrs_.emplace_back();
      Push(Ref{Tag::kCsr, static_cast<int64_t>(csrs_.size() - 1)});
      return absl::OkStatus();
    }
    case kReduce: {
      FGL_ASSIGN_OR_RETURN(Ref args, Pop());
      FGL_ASSIGN_OR_RETURN(Ref callable, Pop());
      return Reduce(callable, args);
    }
    case kBuild: {
      FGL_ASSIGN_OR_RETURN(Ref state, Pop());
      FGL_ASSIGN_OR_RETURN(Ref target, Top());
      switch (target.tag) {
        case Tag::kArray: return BuildArray(arrays_[target.v], state);
        case Tag::kDtype: return BuildDtype(dtypes_[target.v], state);
        case Tag::kCsr: return BuildCsr(csrs_[target.v], state);
        case Tag::kObject: {
          PygObject& obj = objects_[target.v];
          if (obj.state >= 0) {
            return Invalid(absl::StrCat("BUILD twice on one ", GlobalName(obj.cls)));
          }
          if (state.tag != Tag::kDict) {
            return Invalid(absl::StrCat(GlobalName(obj.cls), " state must be a dict, not ",
                                        TagName(state.tag)));
          }
          obj.state = state.v;
          return absl::OkStatus();
        }
        default: return Invalid(absl::StrCat("cannot set the state of a ", TagName(target.tag)));
      }
    }
    case kStop:
      stopped_ = true;
      return absl::OkStatus();
    default:
      return Unsupported();
  }
}

absl::StatusOr<PickleValue> Unpickler::Convert(Ref r, int depth) {
  FGL_RETURN_IF_ERROR(Charge(sizeof(PickleValue)));
  auto too_deep = [&]() {
    return absl::ResourceExhaustedError(absl::StrCat(source_, ": containers nest deeper than ",
                                                     options_.max_depth,
                                                     " levels (or refer to themselves)"));
  };
  switch (r.tag) {
    case Tag::kNone: return PickleValue();
    case Tag::kBool: return PickleValue::Bool(r.v != 0);
    case Tag::kInt: return PickleValue::Int(r.v);
    case Tag::kString: {
      FGL_RETURN_IF_ERROR(Charge(static_cast<int64_t>(strings_[r.v].size())));
      return PickleValue::String(strings_[r.v]);
    }
    case Tag::kList:
    case Tag::kTuple: {
      if (depth >= options_.max_depth) return too_deep();
      // Conversion never adds to the arenas, so these references stay valid while recursing.
      const std::vector<Ref>& refs = r.tag == Tag::kList ? lists_[r.v] : tuples_[r.v];
      std::vector<PickleValue> items;
      items.reserve(refs.size());
      for (const Ref& item : refs) {
        FGL_ASSIGN_OR_RETURN(PickleValue v, Convert(item, depth + 1));
        items.push_back(std::move(v));
      }
      return r.tag == Tag::kList ? PickleValue::List(std::move(items))
                                 : PickleValue::Tuple(std::move(items));
    }
    case Tag::kDict: {
      if (depth >= options_.max_depth) return too_deep();
      const std::vector<std::pair<Ref, Ref>>& entries = dicts_[r.v].entries;
      PickleDict out;
      out.entries.reserve(entries.size());
      for (const auto& [key, value] : entries) {
        PickleKey k;
        if (key.tag == Tag::kInt) {
          k = key.v;
        } else {
          k = strings_[key.v];
        }
        FGL_ASSIGN_OR_RETURN(PickleValue v, Convert(value, depth + 1));
        out.entries.emplace_back(std::move(k), std::move(v));
      }
      return PickleValue::Dict(std::move(out));
    }
    case Tag::kArray: {
      if (!arrays_[r.v].built) {
        return absl::InvalidArgumentError(
            absl::StrCat(source_, ": an ndarray never received its state (BUILD)"));
      }
      FGL_RETURN_IF_ERROR(Charge(static_cast<int64_t>(arrays_[r.v].array.data.size())));
      return PickleValue::Array(arrays_[r.v].array);
    }
    case Tag::kCsr: {
      const CsrObject& c = csrs_[r.v];
      if (!c.built) {
        return absl::InvalidArgumentError(
            absl::StrCat(source_, ": a csr_matrix never received its state (BUILD)"));
      }
      const int64_t bytes = static_cast<int64_t>(
          c.matrix.indptr.data.size() + c.matrix.indices.data.size() + c.matrix.data.data.size());
      FGL_RETURN_IF_ERROR(Charge(bytes));
      return PickleValue::Csr(c.matrix);
    }
    case Tag::kStorage:
      return absl::InvalidArgumentError(absl::StrCat(
          source_, ": a storage outside _rebuild_tensor_v2 cannot be part of the result"));
    case Tag::kValue: return values_[r.v];
    case Tag::kObject: {
      const PygObject& obj = objects_[r.v];
      if (obj.state < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            source_, ": a '", GlobalName(obj.cls), "' never received its state (BUILD)"));
      }
      // PyG's GlobalStorage points back at its Data (`_parent`, a weakref in Python): cut the
      // cycle there rather than refuse the file.
      if (converting_[r.v]) return PickleValue();
      converting_[r.v] = true;
      absl::StatusOr<PickleValue> v = Convert(Ref{Tag::kDict, obj.state}, depth);
      converting_[r.v] = false;
      return v;
    }
    case Tag::kGlobal: {
      const Global g = static_cast<Global>(r.v);
      if (g == Global::kPygDataEdgeAttr || g == Global::kPygDataTensorAttr) {
        std::string name = GlobalName(g);
        std::replace(name.begin(), name.end(), ' ', '.');
        return PickleValue::Class(std::move(name));
      }
      [[fallthrough]];
    }
    case Tag::kDtype:
      return absl::InvalidArgumentError(absl::StrCat(
          source_, ": a bare ",
          r.tag == Tag::kGlobal ? absl::StrCat("'", GlobalName(static_cast<Global>(r.v)), "'")
                                : std::string("dtype"),
          " cannot be part of the result"));
  }
  return absl::InternalError("unreachable");
}

absl::StatusOr<PickleValue> Unpickler::Run() {
  while (!stopped_) {
    if (pos_ >= in_.size()) {
      return absl::DataLossError(
          absl::StrCat(source_, ": truncated at byte ", in_.size(), " (no STOP opcode)"));
    }
    FGL_RETURN_IF_ERROR(Step());
  }
  if (!marks_.empty()) return Invalid("a MARK is still open");
  if (stack_.size() != 1) {
    return Invalid(absl::StrCat("the stack holds ", stack_.size(), " values instead of 1"));
  }
  if (pos_ != in_.size()) {
    return Invalid(absl::StrCat(in_.size() - pos_, " trailing bytes after STOP"));
  }
  return Convert(stack_.back(), 0);
}

int64_t DtypeItemsize(absl::string_view dtype) {
  if (dtype.size() != 3 || dtype[2] < '1' || dtype[2] > '8') return 0;
  return dtype[2] - '0';
}

absl::Status CheckArray(const NdArray& a, absl::string_view kinds) {
  const int64_t itemsize = DtypeItemsize(a.dtype);
  if (itemsize == 0 || kinds.find(a.dtype[1]) == absl::string_view::npos ||
      (a.dtype[0] != '<' && a.dtype[0] != '>' && a.dtype[0] != '|')) {
    return absl::InvalidArgumentError(absl::StrCat("ndarray dtype '", absl::CHexEscape(a.dtype),
                                                   "' is not one of the kinds ", kinds));
  }
  int64_t count = 1;
  for (int64_t d : a.shape) {
    if (d < 0 || (d != 0 && count > std::numeric_limits<int64_t>::max() / itemsize / d)) {
      return absl::InvalidArgumentError("ndarray shape is negative or overflows");
    }
    count *= d;
  }
  if (static_cast<int64_t>(a.data.size()) != count * itemsize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ndarray holds ", a.data.size(), " bytes, shape and dtype need ", count * itemsize));
  }
  return absl::OkStatus();
}

uint64_t LoadBits(const char* p, int64_t size, bool big_endian) {
  uint64_t v = 0;
  for (int64_t i = 0; i < size; ++i) {
    const uint64_t byte = static_cast<uint8_t>(p[big_endian ? size - 1 - i : i]);
    v |= byte << (8 * i);
  }
  return v;
}

// Storage position of C-order element `c` of a Fortran-order array.
int64_t FortranOffset(int64_t c, const std::vector<int64_t>& shape) {
  int64_t offset = 0, stride = 1;
  std::vector<int64_t> index(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    index[k] = c % shape[k];
    c /= shape[k];
  }
  for (size_t k = 0; k < shape.size(); ++k) {
    offset += index[k] * stride;
    stride *= shape[k];
  }
  return offset;
}

template <typename T, typename Load>
std::vector<T> ReadElements(const NdArray& a, Load load) {
  const int64_t n = a.num_elements(), itemsize = a.itemsize();
  std::vector<T> out(n);
  const bool permute = a.fortran_order && a.shape.size() > 1;
  for (int64_t c = 0; c < n; ++c) {
    const int64_t s = permute ? FortranOffset(c, a.shape) : c;
    out[c] = load(a.data.data() + s * itemsize);
  }
  return out;
}

}  // namespace

int64_t NdArray::itemsize() const { return DtypeItemsize(dtype); }

int64_t NdArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

PickleValue PickleValue::Bool(bool value) {
  PickleValue v;
  v.kind_ = Kind::kBool;
  v.value_ = value;
  return v;
}
PickleValue PickleValue::Int(int64_t value) {
  PickleValue v;
  v.kind_ = Kind::kInt;
  v.value_ = value;
  return v;
}
PickleValue PickleValue::String(std::string value) {
  PickleValue v;
  v.kind_ = Kind::kString;
  v.value_ = std::move(value);
  return v;
}
PickleValue PickleValue::List(std::vector<PickleValue> items) {
  PickleValue v;
  v.kind_ = Kind::kList;
  v.value_ = std::make_shared<const std::vector<PickleValue>>(std::move(items));
  return v;
}
PickleValue PickleValue::Tuple(std::vector<PickleValue> items) {
  PickleValue v = List(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}
PickleValue PickleValue::Dict(PickleDict dict) {
  PickleValue v;
  v.kind_ = Kind::kDict;
  v.value_ = std::make_shared<const PickleDict>(std::move(dict));
  return v;
}
PickleValue PickleValue::Array(NdArray array) {
  PickleValue v;
  v.kind_ = Kind::kNdArray;
  v.value_ = std::make_shared<const NdArray>(std::move(array));
  return v;
}
PickleValue PickleValue::Csr(CsrMatrix matrix) {
  PickleValue v;
  v.kind_ = Kind::kCsrMatrix;
  v.value_ = std::make_shared<const CsrMatrix>(std::move(matrix));
  return v;
}

PickleValue PickleValue::Class(std::string qualified_name) {
  PickleValue v;
  v.kind_ = Kind::kClass;
  v.value_ = std::move(qualified_name);
  return v;
}
PickleValue PickleValue::Tensor(std::shared_ptr<const TorchTensor> tensor) {
  PickleValue v;
  v.kind_ = Kind::kTensor;
  v.value_ = std::move(tensor);
  return v;
}

const bool* PickleValue::as_bool() const { return std::get_if<bool>(&value_); }
const int64_t* PickleValue::as_int() const { return std::get_if<int64_t>(&value_); }
const std::string* PickleValue::as_string() const {
  return kind_ == Kind::kString ? std::get_if<std::string>(&value_) : nullptr;
}
const std::string* PickleValue::as_class() const {
  return kind_ == Kind::kClass ? std::get_if<std::string>(&value_) : nullptr;
}
const TorchTensor* PickleValue::as_tensor() const {
  auto* p = std::get_if<std::shared_ptr<const TorchTensor>>(&value_);
  return p ? p->get() : nullptr;
}
const std::vector<PickleValue>* PickleValue::as_list() const {
  if (kind_ != Kind::kList) return nullptr;
  return std::get<std::shared_ptr<const std::vector<PickleValue>>>(value_).get();
}
const std::vector<PickleValue>* PickleValue::as_tuple() const {
  if (kind_ != Kind::kTuple) return nullptr;
  return std::get<std::shared_ptr<const std::vector<PickleValue>>>(value_).get();
}
const PickleDict* PickleValue::as_dict() const {
  auto* p = std::get_if<std::shared_ptr<const PickleDict>>(&value_);
  return p ? p->get() : nullptr;
}
const NdArray* PickleValue::as_ndarray() const {
  auto* p = std::get_if<std::shared_ptr<const NdArray>>(&value_);
  return p ? p->get() : nullptr;
}
const CsrMatrix* PickleValue::as_csr() const {
  auto* p = std::get_if<std::shared_ptr<const CsrMatrix>>(&value_);
  return p ? p->get() : nullptr;
}

const PickleValue* PickleDict::Find(const PickleKey& key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

const char* KindName(PickleValue::Kind kind) {
  switch (kind) {
    case PickleValue::Kind::kNone: return "None";
    case PickleValue::Kind::kBool: return "bool";
    case PickleValue::Kind::kInt: return "int";
    case PickleValue::Kind::kString: return "str";
    case PickleValue::Kind::kList: return "list";
    case PickleValue::Kind::kTuple: return "tuple";
    case PickleValue::Kind::kDict: return "dict";
    case PickleValue::Kind::kNdArray: return "ndarray";
    case PickleValue::Kind::kCsrMatrix: return "csr_matrix";
    case PickleValue::Kind::kClass: return "class";
    case PickleValue::Kind::kTensor: return "tensor";
  }
  return "?";
}

absl::StatusOr<PickleValue> Unpickle(absl::string_view bytes, absl::string_view source,
                                     const UnpickleOptions& options) {
  return Unpickler(bytes, source, options).Run();
}

absl::StatusOr<std::vector<int64_t>> NdArrayToInt64(const NdArray& a) {
  FGL_RETURN_IF_ERROR(CheckArray(a, "biu"));
  const int64_t size = a.itemsize();
  const bool big = a.dtype[0] == '>';
  const char kind = a.dtype[1];
  if (kind == 'u' && size == 8) {
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      if (LoadBits(a.data.data() + i * 8, 8, big) >> 63) {
        return absl::InvalidArgumentError(absl::StrCat("ndarray element ", i, " exceeds int64"));
      }
    }
  }
  return ReadElements<int64_t>(a, [&](const char* p) -> int64_t {
    const uint64_t bits = LoadBits(p, size, big);
    if (kind == 'b') return bits != 0;
    if (kind == 'i' && size < 8 && (bits >> (8 * size - 1)) != 0) {
      return static_cast<int64_t>(bits | (~uint64_t{0} << (8 * size)));  // sign-extend
    }
    return static_cast<int64_t>(bits);
  });
}

absl::StatusOr<std::vector<float>> NdArrayToFloat(const NdArray& a) {
  FGL_RETURN_IF_ERROR(CheckArray(a, "biuf"));
  const int64_t size = a.itemsize();
  const bool big = a.dtype[0] == '>';
  const char kind = a.dtype[1];
  if (kind == 'f' && size != 4 && size != 8) {
    return absl::InvalidArgumentError(absl::StrCat("ndarray dtype ", a.dtype, " is not supported"));
  }
  if (kind != 'f') {
    FGL_ASSIGN_OR_RETURN(std::vector<int64_t> ints, NdArrayToInt64(a));
    return std::vector<float>(ints.begin(), ints.end());
  }
  return ReadElements<float>(a, [&](const char* p) -> float {
    const uint64_t bits = LoadBits(p, size, big);
    if (size == 4) {
      const uint32_t b32 = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b32, sizeof(f));
      return f;
    }
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    return static_cast<float>(d);
  });
}

}  // namespace fgl::graph::io
