// FedEgo's data-side mechanics (seeds_fedego.md §5–6): mashed ego-graphs (Eq. 8), label
// distributions (Eq. 3), their L1 "EMD" (Eq. 14) and the mixing coefficient (Eq. 15).
#ifndef FGL_METHODS_FEDEGO_MIXUP_H_
#define FGL_METHODS_FEDEGO_MIXUP_H_

#include <torch/torch.h>

namespace fgl::methods::fedego {

// Eq. 3: the mean one-hot label of `labels` (int64 [n]) over `num_classes`, float64 [C].
torch::Tensor LabelDistribution(const torch::Tensor& labels, int64_t num_classes);
// Eq. 14: Σ_c |p_local(c) − p_global(c)|, in [0, 2].
double LabelEmd(const torch::Tensor& p_local, const torch::Tensor& p_global);
// Eq. 15: λ = (emd / 2)^γ, clamped to [0, 1].
double MixingCoefficient(double emd, double gamma);

struct MashedEgoGraphs {
  torch::Tensor embeddings;  // float [M, S, h]
  torch::Tensor labels;      // float [M, S, C]: soft labels at every position
};
// Eq. 8 over chunks of `chunk` consecutive trees (int64 [n, S] node ids, -1 absent): at each
// position, the mean of `embeddings` [N, h] rows and of one-hot `labels` [N] over the chunk's
// present entries (a position absent from the whole chunk stays zero). `first_only`: each
// chunk's first tree as it is ("FedEgo w/o Mixup").
MashedEgoGraphs MashEgoGraphs(const torch::Tensor& trees, const torch::Tensor& embeddings,
                              const torch::Tensor& labels, int64_t num_classes, int64_t chunk,
                              bool first_only);

}  // namespace fgl::methods::fedego

#endif  // FGL_METHODS_FEDEGO_MIXUP_H_
