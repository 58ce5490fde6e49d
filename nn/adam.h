// torch::optim::Adam with the same numbers bit for bit, but one pass over each parameter where
// LibTorch's AVX2 kernels run (the run binaries pin them), else the step's temporaries (the decayed
// gradient and sqrt(v)/sqrt(1 - beta2^t) + eps) in a scratch buffer kept per thread.
#ifndef FGL_NN_ADAM_H_
#define FGL_NN_ADAM_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nn/spill_file.h"

namespace fgl::nn {

// LibTorch's step allocates up to two parameter-sized temporaries. Above glibc's 32 MB mmap
// threshold (FedSage+'s generator layer: 279 MB on Coauthor-CS) each is a fresh mapping that the
// kernel faults in and zero-fills at every step. Same options, state and serialisation as
// torch::optim::Adam (amsgrad is not supported: a CHECK).
class Adam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  ~Adam() override;
  torch::Tensor step(LossClosure closure = nullptr) override;

  // True where step() takes its fused one-pass kernel (LibTorch's AVX2 kernels are pinned and the
  // CPU has AVX2 and FMA) for contiguous float CPU parameters; else it runs LibTorch's ops.
  static bool FusedStepApplies();

  // Frees this thread's scratch buffers (they grow to the largest parameter stepped).
  static void ReleaseScratch();

  // For an optimiser that idles between federated rounds: moves both moments of every parameter
  // of at least `min_bytes` to an unnamed file in `dir` (unlinked at once: nothing outlives the
  // process) and frees them. Until Unspill reads them back bit for bit, step() is a programmer
  // error and state() holds empty moments for them. With no moment that large nothing happens
  // (spilled() stays false). Errors name the directory and leave the moments in memory.
  absl::Status Spill(const std::string& dir, int64_t min_bytes);
  absl::Status Unspill();
  bool spilled() const { return spill_file_ != nullptr; }

 private:
  struct Spilled {  // in the file's order
    std::string key;       // the state's key (the parameter's TensorImpl)
    bool squared = false;  // exp_avg_sq, else exp_avg
    torch::TensorOptions options;
  };
  std::unique_ptr<SpillFile> spill_file_;
  std::vector<Spilled> spilled_;
};

}  // namespace fgl::nn

#endif  // FGL_NN_ADAM_H_
