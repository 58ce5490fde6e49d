// Tensors <-> fl.proto.Tensor as raw little-endian bytes with dtype and shape. Decoding checks
// the byte count against the shape before copying anything out of the message.
#ifndef FGL_FL_TENSOR_CODEC_H_
#define FGL_FL_TENSOR_CODEC_H_

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/proto/message.pb.h"

namespace fgl::fl {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// float32, float64 and int64 tensors on any device (copied to the CPU). CHECK-fails on another
// dtype: what a method sends is its own code's choice, not input.
proto::Tensor EncodeTensor(const std::string& name, const torch::Tensor& tensor);

// InvalidArgument for an unknown dtype, a negative or overflowing shape, or a byte count that
// does not match the shape. Returns a CPU tensor.
absl::StatusOr<torch::Tensor> DecodeTensor(const proto::Tensor& tensor);

// True when no entry is NaN or +-Inf (integer tensors always). One pass without allocation for
// contiguous CPU float tensors.
bool AllFinite(const torch::Tensor& tensor);

// Appends every named tensor to `message` (detached copies).
void AddTensors(const NamedTensors& tensors, proto::Message* message);

// Adds each tensor's raw data bytes (numel × dtype size) to `by_group[group]`, its group being its
// name up to the first '.' ("reduction.weight" -> "reduction"): what a method uploads, by kind,
// without the message's framing (FedEgo Table 7 counts parameters and mashed ego-graphs apart).
void AddTensorBytesByGroup(const proto::Message& message, google::protobuf::Map<std::string, int64_t>* by_group);

// All tensors of a message by name; InvalidArgument for a duplicate name or a bad tensor.
absl::StatusOr<std::map<std::string, torch::Tensor>> DecodeTensors(const proto::Message& message);

// Copies the message's tensors into `targets` (same names, shapes and dtypes; every target must
// be present; NaN/Inf refused). Used to load received weights into a model without touching
// autograd. All-or-nothing: on an error no target has changed.
absl::Status LoadTensors(const proto::Message& message, const NamedTensors& targets);

// Removes the tensors named "<prefix><name>" from `message` and returns them decoded, keyed by
// <name>: how a method carries a second set of tensors (SCAFFOLD's control variates) beside
// the model in one message.
absl::StatusOr<std::map<std::string, torch::Tensor>> TakeTensors(const std::string& prefix,
                                                                  proto::Message* message);

// TakeTensors for a message that must stay as it is: the "<prefix>" tensors decoded (keyed by
// <name>), and everything else copied into `rest` (if not null). Nothing is copied twice.
absl::StatusOr<std::map<std::string, torch::Tensor>> SplitTensors(const std::string& prefix,
                                                                   const proto::Message& message,
                                                                   proto::Message* rest);

// The tensors of `tensors` named as in `like`, in `like`'s order. InvalidArgument naming `who` and
// the first tensor that is missing, shaped differently or (when `require_finite`) not finite.
// How a server checks a reply or a checkpoint against the model it expects.
absl::StatusOr<NamedTensors> MatchTensors(const std::map<std::string, torch::Tensor>& tensors,
                                          const NamedTensors& like, const std::string& who,
                                          bool require_finite = true);

// sum_k weights[k] * sets[k] per tensor, accumulated in float64 and returned in the dtype of
// sets[0] (every set names the same tensors in the same order). The weights are used as given.
NamedTensors WeightedSum(const std::vector<const NamedTensors*>& sets, const std::vector<double>& weights);

// The same tensors named "<prefix><name>".
NamedTensors WithPrefix(const std::string& prefix, const NamedTensors& tensors);

}  // namespace fgl::fl

#endif  // FGL_FL_TENSOR_CODEC_H_
