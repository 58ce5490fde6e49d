// The one device option of a run: "cpu" (default) or "cuda[:i]" when LibTorch has CUDA.
#ifndef FGL_NN_DEVICE_H_
#define FGL_NN_DEVICE_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/statusor.h"

namespace fgl::nn {

// FailedPrecondition for "cuda" when this LibTorch has no usable GPU; InvalidArgument otherwise.
absl::StatusOr<torch::Device> ParseDevice(const std::string& name);

}  // namespace fgl::nn

#endif  // FGL_NN_DEVICE_H_
