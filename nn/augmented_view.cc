#include "nn/augmented_view.h"

#include "graph/augment.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::nn {

absl::StatusOr<AugmentedView> Augment(const graph::CsrGraph& graph, const NodeFeatures& features, torch::Device device,
                                      double edge_drop, double feature_mask, graph::Rng& rng) {
  const graph::CsrGraph g = edge_drop > 0 ? graph::DropEdges(graph, edge_drop, rng) : graph;
  FGL_ASSIGN_OR_RETURN(GraphView view, GraphView::Create(g, device));
  if (feature_mask <= 0) return AugmentedView{features, std::move(view)};
  const torch::Tensor keep = graph::FeatureColumnKeepMask(features.width(), feature_mask, rng);
  return AugmentedView{features.MaskColumns(keep.to(device)), std::move(view)};
}

}  // namespace fgl::nn
