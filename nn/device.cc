#include "nn/device.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgl::nn {

absl::StatusOr<torch::Device> ParseDevice(const std::string& name) {
  if (name.empty() || name == "cpu") return torch::Device(torch::kCPU);
  if (name.rfind("cuda", 0) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("device '", name, "': expected cpu or cuda[:i]"));
  }
  if (!torch::cuda::is_available()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device '", name, "': this LibTorch has no usable CUDA device (build with --config=cuda "
        "and FGL_LIBTORCH_DIR pointing at a CUDA LibTorch)"));
  }
  try {
    return torch::Device(name);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat("device '", name, "': ", e.what_without_backtrace()));
  }
}

}  // namespace fgl::nn
