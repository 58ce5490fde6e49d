#include "graph/io/torch_pt.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/io/file.h"
#include "graph/io/npy.h"
#include "third_party/absl_ext/status_macros.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "torch_pt.cc hands little-endian storage bytes straight to the CPU");

namespace fgl::graph::io {
namespace {

struct StorageDtype {
  const char* storage_type;
  torch::ScalarType dtype;
  int64_t itemsize;
};
constexpr StorageDtype kStorageDtypes[] = {
    {"FloatStorage", torch::kFloat32, 4},
    {"LongStorage", torch::kInt64, 8},
    {"BoolStorage", torch::kBool, 1},
};

// A storage read once and shared by every view of it.
struct Storage {
  std::string type;
  int64_t numel = 0;
  torch::Tensor flat;  // [numel], owns a copy of the member's bytes
};

// Reads storages out of the archive on demand, checks views against them and charges every
// byte it allocates against one budget.
class TensorReader {
 public:
  TensorReader(NpzArchive& archive, std::string prefix, int64_t budget)
      : archive_(archive), prefix_(std::move(prefix)), budget_(budget) {}

  absl::StatusOr<PickleValue> Rebuild(const TorchTensorSpec& spec) {
    const StorageDtype* dt = nullptr;
    for (const StorageDtype& d : kStorageDtypes) {
      if (spec.storage_type == d.storage_type) dt = &d;
    }
    if (dt == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown storage ", spec.storage_type));
    }
    const std::string member = absl::StrCat(prefix_, "/data/", spec.storage_key);
    FGL_ASSIGN_OR_RETURN(const Storage* storage, GetStorage(member, spec, *dt));
    const std::string what =
        absl::StrCat("tensor of size [", absl::StrJoin(spec.size, ", "), "] stride [",
                     absl::StrJoin(spec.stride, ", "), "] offset ", spec.offset, " on ", member,
                     " (", spec.storage_type, " of ", storage->numel, " elements)");
    // Checked in int64 without overflow: numel, and the last element the view reaches.
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    int64_t numel = 1, last = spec.offset;
    for (size_t d = 0; d < spec.size.size(); ++d) {
      const int64_t n = spec.size[d], s = spec.stride[d];
      if (n != 0 && numel > kMax / n) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": size overflows int64"));
      }
      numel *= n;
      if (n > 0 && s > 0 && (n - 1 > (kMax - last) / s)) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": view overflows int64"));
      }
      if (n > 0) last += (n - 1) * s;
    }
    if (numel > 0 && last >= storage->numel) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the view reaches element ", last, ", outside the storage"));
    }
    if (numel == 0 && spec.offset > storage->numel) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": offset outside the storage"));
    }
    if (numel > kMax / dt->itemsize) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": size overflows int64"));
    }
    FGL_RETURN_IF_ERROR(Charge(numel * dt->itemsize, what));
    // as_strided on the checked view, then a contiguous copy that owns its memory: the result
    // never aliases the storage another tensor of the file may share.
    torch::Tensor value = storage->flat.as_strided(spec.size, spec.stride, spec.offset)
                              .clone(torch::MemoryFormat::Contiguous);
    auto tensor = std::make_shared<TorchTensor>();
    tensor->value = std::move(value);
    tensor->location = spec.location;
    return PickleValue::Tensor(std::move(tensor));
  }

 private:
  absl::Status Charge(int64_t bytes, const std::string& what) {
    if (bytes <= budget_ - used_) {
      used_ += bytes;
      return absl::OkStatus();
    }
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": needs ", bytes, " more bytes; the file's budget of ", budget_,
                     " bytes (memory_factor x its size + 1 MiB) has ", budget_ - used_, " left"));
  }

  absl::StatusOr<const Storage*> GetStorage(const std::string& member, const TorchTensorSpec& spec,
                                            const StorageDtype& dt) {
    if (auto it = storages_.find(member); it != storages_.end()) {
      const Storage& s = it->second;
      if (s.type != spec.storage_type || s.numel != spec.storage_numel) {
        return absl::InvalidArgumentError(
            absl::StrCat(member, " is used as ", s.type, " of ", s.numel, " elements and as ",
                         spec.storage_type, " of ", spec.storage_numel));
      }
      return &s;
    }
    if (!archive_.Contains(member)) {
      return absl::DataLossError(absl::StrCat("no member ", member, " for a ", spec.storage_type,
                                              " of ", spec.storage_numel, " elements"));
    }
    if (spec.storage_numel > std::numeric_limits<int64_t>::max() / dt.itemsize) {
      return absl::InvalidArgumentError(
          absl::StrCat(member, ": ", spec.storage_numel, " elements overflow int64 bytes"));
    }
    const int64_t bytes = spec.storage_numel * dt.itemsize;
    // Charged before reading (the member's directory entry may lie) and again as the copy
    // below: the string and the tensor are both alive for a moment.
    FGL_RETURN_IF_ERROR(Charge(2 * std::min(bytes, std::numeric_limits<int64_t>::max() / 2),
                               absl::StrCat(member, " (", spec.storage_type, ")")));
    FGL_ASSIGN_OR_RETURN(std::string raw, archive_.ReadMemberBytes(member));
    if (static_cast<int64_t>(raw.size()) != bytes) {
      return absl::DataLossError(absl::StrCat(member, " holds ", raw.size(), " bytes, but a ",
                                              spec.storage_type, " of ", spec.storage_numel,
                                              " elements needs ", bytes));
    }
    if (dt.dtype == torch::kBool) {
      // Any other byte would be a bool LibTorch's kernels treat inconsistently.
      for (size_t i = 0; i < raw.size(); ++i) {
        if (static_cast<uint8_t>(raw[i]) > 1) {
          return absl::InvalidArgumentError(
              absl::StrCat(member, ": bool element ", i, " is ",
                           static_cast<int>(static_cast<uint8_t>(raw[i])), ", not 0 or 1"));
        }
      }
    }
    Storage s;
    s.type = spec.storage_type;
    s.numel = spec.storage_numel;
    s.flat = torch::empty({spec.storage_numel}, torch::TensorOptions().dtype(dt.dtype));
    if (bytes > 0) std::memcpy(s.flat.data_ptr(), raw.data(), static_cast<size_t>(bytes));
    return &storages_.emplace(member, std::move(s)).first->second;
  }

  NpzArchive& archive_;
  const std::string prefix_;
  const int64_t budget_;
  int64_t used_ = 0;
  std::map<std::string, Storage> storages_;  // by member name
};

int64_t Budget(int64_t factor, size_t size) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  factor = std::max<int64_t>(factor, 1);
  const int64_t n = static_cast<int64_t>(std::min<size_t>(size, static_cast<size_t>(kMax)));
  return n > (kMax - kMiB) / factor ? kMax : factor * n + kMiB;
}

}  // namespace

absl::StatusOr<PickleValue> ParseTorchSave(std::string bytes, const std::string& source,
                                           const TorchSaveOptions& options) {
  const int64_t budget = Budget(options.memory_factor, bytes.size());
  NpzOptions zip_options;
  zip_options.max_member_bytes = static_cast<size_t>(budget);
  zip_options.format_name = "torch.save";
  FGL_ASSIGN_OR_RETURN(NpzArchive archive,
                       NpzArchive::FromBytes(std::move(bytes), source, zip_options));
  // torch.save writes `<name>/data.pkl` with everything else under the same `<name>/`.
  std::string prefix;
  int found = 0;
  for (const std::string& key : archive.keys()) {
    const size_t slash = key.find('/');
    if (slash != std::string::npos && key.substr(slash) == "/data.pkl") {
      prefix = key.substr(0, slash);
      ++found;
    }
  }
  if (found != 1) {
    return absl::DataLossError(
        absl::StrCat(source, ": a torch.save archive holds one '<name>/data.pkl'; this one has ",
                     found, " (members: ", absl::StrJoin(archive.keys(), ", "), ")"));
  }
  if (archive.Contains(prefix + "/byteorder")) {
    FGL_ASSIGN_OR_RETURN(std::string order, archive.ReadMemberBytes(prefix + "/byteorder"));
    if (order != "little") {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", prefix, "/byteorder: '", order,
                                                     "' (only little-endian files are supported)"));
    }
  }
  FGL_ASSIGN_OR_RETURN(std::string pickle, archive.ReadMemberBytes(prefix + "/data.pkl"));
  TensorReader reader(archive, prefix, budget);
  UnpickleOptions unpickle;
  unpickle.max_depth = options.max_depth;
  unpickle.memory_factor = options.pickle_memory_factor;
  unpickle.allow_pyg_data = true;
  unpickle.rebuild_tensor = [&reader](const TorchTensorSpec& spec) { return reader.Rebuild(spec); };
  return Unpickle(pickle, absl::StrCat(source, ":", prefix, "/data.pkl"), unpickle);
}

absl::StatusOr<PickleValue> ReadTorchSave(const std::string& path,
                                          const TorchSaveOptions& options) {
  FGL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  return ParseTorchSave(std::move(bytes), path, options);
}

absl::StatusOr<std::vector<int64_t>> ReadPickledIntList(const std::string& path) {
  FGL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  UnpickleOptions options;
  options.max_protocol = 4;
  FGL_ASSIGN_OR_RETURN(PickleValue value, Unpickle(bytes, path, options));
  const std::vector<PickleValue>* list = value.as_list();
  if (list == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a list of ints, got a ", KindName(value.kind())));
  }
  std::vector<int64_t> out;
  out.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    const int64_t* v = (*list)[i].as_int();
    if (v == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": item ", i, " is a ", KindName((*list)[i].kind()), ", not an int"));
    }
    out.push_back(*v);
  }
  return out;
}

absl::StatusOr<const PickleDict*> PygDataAttributes(const PickleValue& data,
                                                    const std::string& where) {
  const PickleValue* value = &data;
  for (const char* key : {"_store", "_mapping"}) {
    const PickleDict* dict = value->as_dict();
    if (dict == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": expected a PyG Data (a dict with '_store'), got a ", KindName(value->kind())));
    }
    value = dict->Find(std::string(key));
    if (value == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": not a PyG Data: no '", key, "' attribute"));
    }
  }
  const PickleDict* attributes = value->as_dict();
  if (attributes == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": PyG Data '_store._mapping' is a ", KindName(value->kind())));
  }
  return attributes;
}

absl::StatusOr<torch::Tensor> TensorField(const PickleDict& dict, const std::string& key,
                                          const std::string& where) {
  const PickleValue* value = dict.Find(key);
  if (value == nullptr) return absl::NotFoundError(absl::StrCat(where, ": no field '", key, "'"));
  const TorchTensor* tensor = value->as_tensor();
  if (tensor == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": field '", key, "' is a ",
                                                   KindName(value->kind()), ", not a tensor"));
  }
  return tensor->value;
}

absl::StatusOr<torch::Tensor> ReadTorchSaveTensor(const std::string& path) {
  FGL_ASSIGN_OR_RETURN(PickleValue value, ReadTorchSave(path));
  const TorchTensor* tensor = value.as_tensor();
  if (tensor == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a tensor, got a ", KindName(value.kind())));
  }
  return tensor->value;
}

}  // namespace fgl::graph::io
