// torch::optim::Adam with the same numbers bit for bit, but the step's temporaries (the decayed
// gradient and sqrt(v)/sqrt(1 - beta2^t) + eps) go to a scratch buffer kept per thread.
#ifndef FGL_NN_ADAM_H_
#define FGL_NN_ADAM_H_

#include <torch/torch.h>

namespace fgl::nn {

// LibTorch's step allocates up to two parameter-sized temporaries. Above glibc's 32 MB mmap
// threshold (FedSage+'s generator layer: 279 MB on Coauthor-CS) each is a fresh mapping that the
// kernel faults in and zero-fills at every step. Same options, state and serialisation as
// torch::optim::Adam (amsgrad is not supported: a CHECK).
class Adam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;

  // Frees this thread's scratch buffers (they grow to the largest parameter stepped).
  static void ReleaseScratch();
};

}  // namespace fgl::nn

#endif  // FGL_NN_ADAM_H_
