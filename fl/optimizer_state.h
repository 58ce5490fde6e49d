// An optimiser's per-parameter state in a message, for checkpoints: a restored optimiser
// continues exactly as the saved one. Adam: step and both moments.
#ifndef FGL_FL_OPTIMIZER_STATE_H_
#define FGL_FL_OPTIMIZER_STATE_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "fl/proto/message.pb.h"
#include "fl/tensor_codec.h"

namespace fgl::fl {

// Adds "<prefix>exp_avg.<name>", "<prefix>exp_avg_sq.<name>" and the scalar "<prefix>step.<name>"
// for every parameter the optimiser has stepped.
void SaveAdamState(const torch::optim::Adam& optimizer, const NamedTensors& params,
                   const std::string& prefix, proto::Message* message);

// Replaces the optimiser's state with the saved one; `tensors` is DecodeTensors(message).
// InvalidArgument (naming `owner` and the parameter) for a missing or misshapen moment.
absl::Status RestoreAdamState(const proto::Message& message,
                              const std::map<std::string, torch::Tensor>& tensors,
                              const NamedTensors& params, const std::string& prefix,
                              const std::string& owner, torch::optim::Adam* optimizer);

// SGD's per-parameter state, its momentum buffer, as "<prefix>momentum_buffer.<name>" (SGD
// without momentum keeps none).
void SaveSgdState(const torch::optim::SGD& optimizer, const NamedTensors& params, const std::string& prefix,
                  proto::Message* message);
absl::Status RestoreSgdState(const std::map<std::string, torch::Tensor>& tensors, const NamedTensors& params,
                             const std::string& prefix, const std::string& owner, torch::optim::SGD* optimizer);

}  // namespace fgl::fl

#endif  // FGL_FL_OPTIMIZER_STATE_H_
