// FedGKC's knowledge level of a trained copilot on its client's graph (Eqs. 7–9), the second
// weight of Knowledge-Aware Model Aggregation (Eqs. 10–11).
#ifndef FGL_METHODS_FEDGKC_KNOWLEDGE_LEVEL_H_
#define FGL_METHODS_FEDGKC_KNOWLEDGE_LEVEL_H_

#include <torch/torch.h>

#include "nn/graph_view.h"

namespace fgl::methods::fedgkc {

// Which terms P_k sums (Fig. 3(a) removes each) and how.
struct KnowledgeTerms {
  bool strength = true;        // Eq. 7: max_c p_ic
  bool class_clarity = true;   // Eq. 8, first term
  bool smoothing = true;       // Eq. 8, second term: −λ · mean_{j∈N(i)} cos(p_i, p_j)
  bool mean_margin = false;    // the first term as (1/(M−1)) Σ_{c≠max}(max p − p_c), not the literal form
  double lambda = 0.1;
};

// Q_i^stren + Q_i^clar per node, float64 [N], for class probabilities `probs` [N, M] (rows sum to 1).
// N(i) excludes i; a node without neighbours has smoothing term 0.
torch::Tensor NodeKnowledge(const torch::Tensor& probs, const nn::GraphView& graph, const KnowledgeTerms& terms);

// Eq. 9: the mean of NodeKnowledge over all nodes, at least `min_knowledge`.
double KnowledgeLevel(const torch::Tensor& probs, const nn::GraphView& graph, const KnowledgeTerms& terms,
                      double min_knowledge);

}  // namespace fgl::methods::fedgkc

#endif  // FGL_METHODS_FEDGKC_KNOWLEDGE_LEVEL_H_
