// FedSage+'s missing-neighbour generator (Zhang et al., NeurIPS 2021; OpenFGL's sizes) and the
// graph operations around it: hiding nodes to make training targets, the feature-matching loss,
// and mending a graph with generated neighbours.
#ifndef FGL_METHODS_FEDSAGE_PLUS_NEIGHGEN_H_
#define FGL_METHODS_FEDSAGE_PLUS_NEIGHGEN_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/csr_graph.h"
#include "nn/graph_view.h"
#include "nn/models/gnn_model.h"

namespace fgl::methods::fedsage_plus {

/// Options for `NeighGen`. Example: `NeighGen gen(NeighGenOptions(1433).max_pred(5));`
struct NeighGenOptions {
  explicit NeighGenOptions(int64_t num_features) : num_features_(num_features) {}
  TORCH_ARG(int64_t, num_features);      ///< Feature width F. No effect after construction.
  TORCH_ARG(int64_t, hidden) = 64;       ///< Encoder hidden width (OpenFGL hid_dim).
  TORCH_ARG(int64_t, latent) = 128;      ///< Encoder output width z.
  TORCH_ARG(int64_t, max_pred) = 5;      ///< Generated neighbours per node, at most.
  TORCH_ARG(double, dropout) = 0.5;      ///< Encoder and fGen dropout.
  TORCH_ARG(bool, truncate_counts) = false;  ///< Slots from dGen's count truncated, not rounded.
};

/// The generated neighbours mending gives each node: min(max_pred, round(num_missing)), int64 [N]
/// (negatives count as 0); with `truncate`, the count truncated instead (the references' cast).
torch::Tensor UsedSlots(const torch::Tensor& num_missing, int64_t max_pred, bool truncate = false);

/// What NeighGen predicts for every node of its input graph.
struct NeighGenOutput {
  torch::Tensor num_missing;  ///< float [N], relu(dGen(z)): the predicted missing-neighbour count
  torch::Tensor features;     ///< float [N, max_pred, F] in (-1, 1): generated neighbour features
};

// encoder: GraphSAGE F -> hidden -> latent (nn "sage", mean aggregation, its logits are z);
// dGen: relu(Linear(latent, 1)); fGen: z + noise -> relu(Linear 256) -> relu(Linear 2048) ->
// dropout -> tanh(Linear max_pred * F), reshaped to [N, max_pred, F].
class NeighGenImpl : public torch::nn::Module {
 public:
  explicit NeighGenImpl(const NeighGenOptions& options_);
  void reset();  // registers encoder, dgen, fgen1, fgen2, fgen_out
  /// `noise`: float [N, latent], the N(0, 1) draw fGen adds to z (the caller seeds it).
  /// fGen computes only the slots anything reads: node v's first max(min_slots[v],
  /// UsedSlots(num_missing)[v]) (the feature loss reads min(true count, max_pred), mending the
  /// predicted count); the others are 0. `min_slots`: int64 [N]; undefined = none.
  NeighGenOutput forward(const nn::NodeFeatures& x, const nn::GraphView& graph, const torch::Tensor& noise,
                         const torch::Tensor& min_slots = {});

  NeighGenOptions options;
  std::shared_ptr<nn::GnnModel> encoder;
  torch::nn::Linear dgen{nullptr}, fgen1{nullptr}, fgen2{nullptr}, fgen_out{nullptr};
};
TORCH_MODULE(NeighGen);

// The features of each node's first max_pred hidden neighbours, as rows of a table: a node's
// slots share rows with its neighbours' instead of copying them ([n, max_pred, F] dense was 250 MB
// per client on Coauthor-CS, mostly zeros).
struct MissingNeighbours {
  torch::Tensor features;  // float [1 + H, F]: row 0 is zeros (an empty slot), then hidden nodes
  torch::Tensor index;     // int64 [n, max_pred]: the row of each slot, 0 where empty
  // The dense [n, max_pred, F] form (zero rows in empty slots).
  torch::Tensor Dense() const;
  // From a dense [n, max_pred, F] tensor (every slot its own row).
  static MissingNeighbours FromDense(const torch::Tensor& dense);
  MissingNeighbours To(torch::Device device) const { return {features.to(device), index.to(device)}; }
};

// The local graph with some nodes hidden, and what each remaining node lost: NeighGen's targets.
struct ImpairedGraph {
  graph::CsrGraph graph;            // induced on `kept`
  std::vector<int64_t> kept;        // impaired node i is local node kept[i] (ascending)
  torch::Tensor features;           // float [n_kept, F]
  torch::Tensor num_missing;        // float [n_kept]: neighbours of kept[i] that were hidden
  MissingNeighbours missing;        // the first max_pred hidden neighbours (ascending id)
};

// Hides `hidden` (distinct local ids) from `graph` (features float [N, F]).
// Example: path 0-1-2-3, hidden {1}: kept [0, 2, 3], num_missing [1, 1, 0], missing (dense)
// [x1, 0...], [x1, 0...], [0...]. InvalidArgument for an id outside [0, N) or a repeat.
// complexity: O(N + E + H * F) for H hidden nodes.
absl::StatusOr<ImpairedGraph> HideNodes(const graph::CsrGraph& graph, const torch::Tensor& features,
                                        const std::vector<int64_t>& hidden, int64_t max_pred);

// floor(portion * |candidates|) of the nodes where `candidate` (bool [N]) is set, drawn from
// `seed`, ascending. FedSage+ hides half of the nodes that are neither training nor test nodes.
std::vector<int64_t> ChooseHidden(const torch::Tensor& candidate, double portion, uint64_t seed);

// The feature-matching loss, FedSage+ Eq. 4 with the true count: for node v with
// k_v = min(num_missing[v], max_pred) hidden neighbours, each of the first k_v generated features
// is matched to its closest hidden neighbour (mean squared error over features); the sum over
// those k_v slots is averaged over all N nodes (nodes without hidden neighbours add 0).
// generated: float [N, max_pred, F]; target: N nodes' slots; num_missing float [N].
torch::Tensor MissingFeatureLoss(const torch::Tensor& generated, const MissingNeighbours& target,
                                 const torch::Tensor& num_missing);

// A graph with generated neighbours appended: node v of `graph` gets
// UsedSlots(num_missing, max_pred, truncate)[v] new nodes (numbered after the original ones, by v then
// slot), each joined to v in both directions, with features generated[v, slot].
struct MendedGraph {
  graph::CsrGraph graph;
  torch::Tensor features;  // cat(x, generated rows): differentiable in `generated`
};
// x float [N, F]; num_missing float [N] (detached counts; negatives count as 0);
// generated float [N, max_pred, F]. complexity: O(N * max_pred + E log d).
absl::StatusOr<MendedGraph> MendGraph(const graph::CsrGraph& graph, const torch::Tensor& x,
                                      const torch::Tensor& num_missing, const torch::Tensor& generated,
                                      bool truncate = false);

}  // namespace fgl::methods::fedsage_plus

#endif  // FGL_METHODS_FEDSAGE_PLUS_NEIGHGEN_H_
