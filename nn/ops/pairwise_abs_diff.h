// Pairwise mean absolute differences of rows, with autograd: the L1 half of FedGen's diversity
// term. LibTorch's cdist(p = 1) is several times slower on these shapes.
#ifndef FGL_NN_OPS_PAIRWISE_ABS_DIFF_H_
#define FGL_NN_OPS_PAIRWISE_ABS_DIFF_H_

#include <torch/torch.h>

namespace fgl::nn {

// x float32 [B, F] on the CPU -> D [B, B], D[i, j] = mean_d |x_i - x_j|. Backward:
// dL/dx_i = sum_j (G_ij + G_ji) sign(x_i - x_j) / F. complexity: O(B^2 F), no [B, B, F] tensor.
torch::Tensor PairwiseMeanAbsDiff(const torch::Tensor& x);

}  // namespace fgl::nn

#endif  // FGL_NN_OPS_PAIRWISE_ABS_DIFF_H_
