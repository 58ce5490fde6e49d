// PyTorch `torch.save` files read without Python or LibTorch's unpickler: the zip archive
// (`<name>/data.pkl` plus raw storages `<name>/data/<key>`) through libzip, the pickle through
// the restricted unpickler of pickle.h with an allow-list of exactly the torch and PyG globals
// that FedTAD's and OpenFGL's saved partitions use. Nothing is called; every storage is checked
// against the views that use it before a byte is copied.
#ifndef FGL_GRAPH_IO_TORCH_PT_H_
#define FGL_GRAPH_IO_TORCH_PT_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/io/pickle.h"

namespace fgl::graph::io {

// What PickleValue::as_tensor() points to.
struct TorchTensor {
  torch::Tensor value;   // a contiguous CPU copy of the saved view (float32, int64 or bool)
  std::string location;  // the device it was saved from ("cpu", "cuda:0"); informational
};

struct TorchSaveOptions {
  // Storage bytes read plus tensor bytes produced are charged against memory_factor * archive
  // size + 1 MiB, so that a small file cannot expand (a deflated storage, a stride-0 view) into
  // a huge allocation. The real files need about 3x (each storage is briefly held twice).
  int64_t memory_factor = 16;
  // For the pickle itself (see UnpickleOptions).
  int max_depth = 64;
  int64_t pickle_memory_factor = 48;
};

// Reads a torch.save zip archive whose pickle holds tensors, PyG Data objects (as the dicts of
// their state; see UnpickleOptions::allow_pyg_data) and plain values. Allowed globals:
// torch._utils._rebuild_tensor_v2, torch.{Float,Long,Bool}Storage, collections.OrderedDict,
// torch_geometric.data.data.{Data,DataEdgeAttr,DataTensorAttr} and torch_geometric.data.
// storage.GlobalStorage; any other (posix.system, builtins.eval, ...) is InvalidArgument naming
// the file and the global. Each storage member must hold exactly numel * itemsize bytes
// (DataLoss otherwise) and every view (offset, size, stride) must lie inside its storage
// (InvalidArgument). A missing file is NotFound, a corrupt zip or pickle DataLoss or
// InvalidArgument, a budget overrun ResourceExhausted; every message starts with `path`.
// complexity: O(file size + elements of the tensors).
absl::StatusOr<PickleValue> ReadTorchSave(const std::string& path,
                                          const TorchSaveOptions& options = {});
// The same from bytes in memory; `source` names them in errors.
absl::StatusOr<PickleValue> ParseTorchSave(std::string bytes, const std::string& source,
                                           const TorchSaveOptions& options = {});

// Reads a plain pickle (protocol <= 4, no globals beyond pickle.h's defaults) of a list of
// ints, e.g. OpenFGL's node_cls/glb_train_<i>.pkl. complexity: O(file size).
absl::StatusOr<std::vector<int64_t>> ReadPickledIntList(const std::string& path);

// Accessors for read values; `where` (file and field) prefixes errors.
// The attribute dict of a PyG Data: data["_store"]["_mapping"]. InvalidArgument otherwise.
absl::StatusOr<const PickleDict*> PygDataAttributes(const PickleValue& data,
                                                    const std::string& where);
// The tensor under string key `key`: NotFound if absent, InvalidArgument if not a tensor.
absl::StatusOr<torch::Tensor> TensorField(const PickleDict& dict, const std::string& key,
                                          const std::string& where);
// The tensor a whole file holds (e.g. OpenFGL's node_cls/train_<i>.pt). complexity: as above.
absl::StatusOr<torch::Tensor> ReadTorchSaveTensor(const std::string& path);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_TORCH_PT_H_
