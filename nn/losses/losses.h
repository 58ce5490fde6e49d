// Losses used across the papers. Masks are bool [N]; every loss is a mean over the nodes it
// covers, and 0 (with a gradient path) when the mask selects no node.
#ifndef FGL_NN_LOSSES_LOSSES_H_
#define FGL_NN_LOSSES_LOSSES_H_

#include <torch/torch.h>

#include "nn/graph_view.h"

namespace fgl::nn {

// Cross-entropy of logits [N, C] against int64 labels [N] over `mask` (undefined = all nodes).
torch::Tensor MaskedCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels,
                                 const torch::Tensor& mask = {});

// Cross-entropy against soft targets [N, C] (rows sum to 1) over `mask`.
torch::Tensor SoftCrossEntropy(const torch::Tensor& logits, const torch::Tensor& target_probs,
                               const torch::Tensor& mask = {});

// KL(softmax(teacher / T) || softmax(student / T)) summed over classes, averaged over the masked
// nodes (PyTorch's 'batchmean'), times T^2 when `scale_t_squared` (Hinton et al.).
torch::Tensor KlDivergence(const torch::Tensor& student_logits, const torch::Tensor& teacher_logits,
                           double temperature = 1.0, const torch::Tensor& mask = {},
                           bool scale_t_squared = false);

// Class prototypes (FedProto, FedTGP): the mean row of `embedding` [N, D] over the nodes in `mask`
// of each class, [C, D] (zeros for a class without such nodes), and those node counts, float [C].
struct ClassPrototypes {
  torch::Tensor prototypes, counts;
};
ClassPrototypes ComputeClassPrototypes(const torch::Tensor& embedding, const torch::Tensor& labels,
                                       const torch::Tensor& mask, int64_t num_classes);

// FedProto's regulariser: Σ over classes c with nodes in `mask` and present[c] of the mean squared
// error between those nodes' embeddings and prototypes[c] (one MSE per class, summed, as OpenFGL).
torch::Tensor PrototypeAlignment(const torch::Tensor& embedding, const torch::Tensor& labels,
                                 const torch::Tensor& mask, const torch::Tensor& prototypes,
                                 const torch::Tensor& present);

// Mean squared error over all entries of the masked rows.
torch::Tensor MeanSquaredError(const torch::Tensor& a, const torch::Tensor& b,
                               const torch::Tensor& mask = {});

// FedGKC Eq. 1: (1/N) sum_i sum_{j in N(i) ∪ {i}} KL(softmax(z_j) || softmax(h_i)), computed in
// the efficient form with (A + I) softmax(z) (one sparse product). Gradient flows to `student`
// (h) only; `teacher` (z) is treated as a constant.
torch::Tensor NeighborhoodKl(const torch::Tensor& student, const torch::Tensor& teacher,
                             const GraphView& graph);

// FGSSL's edge-level structure distillation (OpenFGL `edge_distribution_high`): for every stored
// edge (i, j) of `graph` (both directions, no self-loops), P_e = softmax(|z_i − z_j| / tau) over
// the dimensions; the mean over edges of KL(P_teacher ‖ P_student). Gradient flows to `student`.
torch::Tensor EdgeDifferenceKl(const torch::Tensor& student, const torch::Tensor& teacher, const GraphView& graph,
                               double tau);

// Graph-autoencoder reconstruction error (FedMpae Eq. 9): (1/N^2) sum_{u,v} (A_uv - sigmoid(z_u.z_v))^2
// with A the graph's binary adjacency without self-loops. Exact, without a dense A: the sum is
// sum sigmoid^2 - 2 sum over edges + the edge count, the first term over 256 KB row blocks of the
// N x N product, which is never kept (the backward pass recomputes each block).
torch::Tensor InnerProductReconstructionMse(const torch::Tensor& z, const GraphView& graph);

// 1 - cosine similarity per row, averaged over the masked rows.
torch::Tensor CosineDistance(const torch::Tensor& a, const torch::Tensor& b,
                             const torch::Tensor& mask = {});

// InfoNCE with temperature tau: row i of `anchor` should match row i of `positive` against all
// other rows of `positive` (and, if `negatives` is given [M, D], also against those).
torch::Tensor InfoNce(const torch::Tensor& anchor, const torch::Tensor& positive, double tau,
                      const torch::Tensor& negatives = {});

// FedGen's diversity term for a conditional generator: exp(-mean_{i,j} d_z(i,j) * d_x(i,j)) with
// d_z the mean squared difference of noise rows and d_x the mean absolute difference of output
// rows. Small when different noise gives different outputs. Pairwise L1 through cdist, so the
// [B, B, F] difference tensor is never materialised. Gradient flows to `x` only.
torch::Tensor GeneratorDiversity(const torch::Tensor& noise, const torch::Tensor& x);

// MOON's model-contrastive term (Li et al. 2021): per row, cross-entropy of
// [cos(z, positive), cos(z, negative)] / tau against the positive, averaged over the rows of
// `mask` (undefined = all). `positive` and `negative` are constants.
torch::Tensor ModelContrastive(const torch::Tensor& z, const torch::Tensor& positive,
                               const torch::Tensor& negative, double tau,
                               const torch::Tensor& mask = {});

}  // namespace fgl::nn

#endif  // FGL_NN_LOSSES_LOSSES_H_
