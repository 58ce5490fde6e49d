// Where a set of parameters lives while it idles between federated rounds: in memory, released
// (storage freed in place, shapes kept, for a broadcast to overwrite) or parked on disk (values in
// an unnamed SpillFile). The parameters' TensorImpls never change, so an optimiser's state, keyed
// by them, survives every transition. An nn::Adam stepping them may have its large moments wait on
// disk while the parameters are released. Which transitions a run takes, and when, is the caller's.
#ifndef FGL_NN_PARAMETER_RESIDENCY_H_
#define FGL_NN_PARAMETER_RESIDENCY_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nn/adam.h"
#include "nn/spill_file.h"

namespace fgl::nn {

/// Options for `ParameterResidency`.
/// Example: `ParameterResidency r(params, ParameterResidencyOptions("/tmp").spill_moments(true));`
struct ParameterResidencyOptions {
  explicit ParameterResidencyOptions(std::string dir) : dir_(std::move(dir)) {}
  TORCH_ARG(std::string, dir);                ///< Where spilled moments and parked parameters go.
  TORCH_ARG(bool, spill_moments) = false;     ///< Release() spills the optimiser's large moments.
  TORCH_ARG(int64_t, spill_min_bytes) = 0;    ///< Only moments at least this large are spilled.
};

class ParameterResidency {
 public:
  enum class Phase {
    kResident,  // in memory (the start)
    kReleased,  // storage freed (empty tensors); the shapes are kept for Reallocate
    kParked,    // values in a file, storage freed
    kUnparked,  // values read back from the file, which still holds them: Park() only frees them
  };

  // `parameters` are resident; their shapes are kept. They share their TensorImpls with the
  // module's (e.g. from named_parameters()), which every transition keeps.
  ParameterResidency(std::vector<torch::Tensor> parameters, ParameterResidencyOptions options);

  Phase phase() const { return phase_; }
  // kParked or kUnparked: a file holds the values.
  bool parked() const { return phase_ == Phase::kParked || phase_ == Phase::kUnparked; }
  const std::vector<std::vector<int64_t>>& shapes() const { return shapes_; }

  // The optimiser stepping (some of) the parameters, not owned; nullptr: none. Set it again
  // before the optimiser goes.
  void set_optimizer(Adam* optimizer) { optimizer_ = optimizer; }

  // kResident -> kReleased: the storage is freed in place. Where options.spill_moments, the
  // optimiser's moments of at least spill_min_bytes go to disk too. A failed spill is returned:
  // the moments stay in memory, the parameters are released all the same.
  absl::Status Release();
  // kReleased -> kResident: uninitialised storage of the kept shapes, for the caller to overwrite;
  // spilled moments are read back. In kResident only the moments are read back.
  absl::Status Reallocate();

  // The optimiser's moments of at least spill_min_bytes to disk and back (bit for bit), in any
  // phase; nothing without an optimiser. They change the optimiser, not the parameters' phase.
  absl::Status SpillMoments() const;
  absl::Status UnspillMoments() const;
  bool moments_spilled() const { return optimizer_ != nullptr && optimizer_->spilled(); }

  // kResident -> kParked: the values are written to a file, then freed; on error nothing changes.
  // kUnparked -> kParked: freed again, without a write. kParked: nothing happens.
  absl::Status Park();
  // kParked or kUnparked: the parked values, bit for bit, as fresh tensors in the given order.
  absl::StatusOr<std::vector<torch::Tensor>> ReadParked() const;
  // kParked -> kUnparked: the parameters hold the parked values again (for reading; the file
  // keeps them, so they must not change before Park()).
  absl::Status Unpark();
  // kParked or kUnparked -> kResident: the file goes, and the parameters get uninitialised
  // storage of the kept shapes (for a restore to overwrite).
  void Drop();

 private:
  void Free();
  void Allocate();

  std::vector<torch::Tensor> parameters_;
  std::vector<std::vector<int64_t>> shapes_;
  ParameterResidencyOptions options_;
  Adam* optimizer_ = nullptr;
  std::unique_ptr<SpillFile> parked_;
  Phase phase_ = Phase::kResident;
};

}  // namespace fgl::nn

#endif  // FGL_NN_PARAMETER_RESIDENCY_H_
