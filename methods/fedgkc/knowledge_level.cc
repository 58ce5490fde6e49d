#include "methods/fedgkc/knowledge_level.h"

#include <algorithm>

namespace fgl::methods::fedgkc {

torch::Tensor NodeKnowledge(const torch::Tensor& probs, const nn::GraphView& graph, const KnowledgeTerms& terms) {
  TORCH_CHECK(probs.dim() == 2 && probs.size(0) == graph.num_nodes() && probs.size(1) >= 2, "NodeKnowledge: probs ",
              probs.sizes(), " for a graph of ", graph.num_nodes(), " nodes");
  torch::NoGradGuard no_grad;
  const torch::Tensor p = probs.to(torch::kFloat64);
  const double m = static_cast<double>(p.size(1));
  const torch::Tensor top = std::get<0>(p.max(1));
  torch::Tensor q = torch::zeros_like(top);
  if (terms.strength) q += top;
  if (terms.class_clarity) {
    // Σ_c p_c = 1, so Σ_{c≠max} p_c = 1 − max p.
    q += terms.mean_margin ? top - (1 - top) / (m - 1) : (2 * top - 1) / (m - 1);
  }
  if (terms.smoothing && terms.lambda != 0) {
    const nn::CsrPattern& a = graph.adjacency();
    const torch::Tensor rows = a.row_index(), cols = a.col();
    const torch::Tensor off_diagonal = rows != cols;
    const torch::Tensor r = rows.masked_select(off_diagonal), c = cols.masked_select(off_diagonal);
    // cos(p_i, p_j) per edge from unit rows; a zero row (impossible for probabilities) stays 0.
    const torch::Tensor unit = p / p.norm(2, 1, true).clamp_min(1e-300);
    const torch::Tensor cos = (unit.index_select(0, r) * unit.index_select(0, c)).sum(1);
    torch::Tensor sum = torch::zeros_like(top).index_add_(0, r, cos);
    torch::Tensor degree = torch::zeros_like(top).index_add_(0, r, torch::ones_like(cos));
    q -= terms.lambda * sum / degree.clamp_min(1);
  }
  return q;
}

double KnowledgeLevel(const torch::Tensor& probs, const nn::GraphView& graph, const KnowledgeTerms& terms,
                      double min_knowledge) {
  return std::max(NodeKnowledge(probs, graph, terms).mean().item<double>(), min_knowledge);
}

}  // namespace fgl::methods::fedgkc
