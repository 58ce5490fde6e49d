#include "nn/losses/losses.h"

#include <algorithm>
#include <cmath>

#include "nn/ops/pairwise_abs_diff.h"
#include "nn/ops/spmm.h"

namespace fgl::nn {
namespace {

// Rows of x selected by mask (all rows when the mask is undefined).
torch::Tensor Rows(const torch::Tensor& x, const torch::Tensor& mask) {
  return mask.defined() ? x.index({mask}) : x;
}

torch::Tensor ZeroWithGrad(const torch::Tensor& like) { return like.sum() * 0.0; }

}  // namespace

torch::Tensor MaskedCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels,
                                 const torch::Tensor& mask) {
  torch::Tensor l = Rows(logits, mask), y = Rows(labels, mask);
  if (l.size(0) == 0) return ZeroWithGrad(logits);
  return torch::nn::functional::cross_entropy(l, y);
}

torch::Tensor SoftCrossEntropy(const torch::Tensor& logits, const torch::Tensor& target_probs,
                               const torch::Tensor& mask) {
  torch::Tensor l = Rows(logits, mask), p = Rows(target_probs, mask);
  if (l.size(0) == 0) return ZeroWithGrad(logits);
  return -(p * torch::log_softmax(l, 1)).sum(1).mean();
}

torch::Tensor KlDivergence(const torch::Tensor& student_logits, const torch::Tensor& teacher_logits,
                           double temperature, const torch::Tensor& mask, bool scale_t_squared) {
  torch::Tensor s = Rows(student_logits, mask), t = Rows(teacher_logits, mask);
  if (s.size(0) == 0) return ZeroWithGrad(student_logits);
  torch::Tensor log_q = torch::log_softmax(s / temperature, 1);
  torch::Tensor log_p = torch::log_softmax(t / temperature, 1);
  torch::Tensor kl = (log_p.exp() * (log_p - log_q)).sum(1).mean();
  return scale_t_squared ? kl * (temperature * temperature) : kl;
}

torch::Tensor MeanSquaredError(const torch::Tensor& a, const torch::Tensor& b,
                               const torch::Tensor& mask) {
  torch::Tensor x = Rows(a, mask), y = Rows(b, mask);
  if (x.size(0) == 0) return ZeroWithGrad(a);
  return (x - y).pow(2).mean();
}

torch::Tensor NeighborhoodKl(const torch::Tensor& student, const torch::Tensor& teacher,
                             const GraphView& graph) {
  TORCH_CHECK(student.sizes() == teacher.sizes(), "NeighborhoodKl: student ", student.sizes(),
              " and teacher ", teacher.sizes(), " differ");
  const int64_t n = student.size(0);
  torch::Tensor q = torch::softmax(teacher.detach(), 1);
  // Unnormalised A + I: ones on the self-loop pattern.
  const CsrPattern& p = graph.adjacency_with_self_loops();
  torch::Tensor ones = torch::ones({p.nnz()}, q.options());
  // sum_i sum_{j in N(i)∪i} sum_d Q_jd log Q_jd = sum_j deg'(j) * <Q_j, log Q_j>.
  torch::Tensor neg_entropy = (q * torch::log(q.clamp_min(1e-30))).sum(1);
  torch::Tensor agg_q = Spmm(p, ones, q);  // (Â Q)_i
  torch::Tensor degree = Spmm(p, ones, torch::ones({n, 1}, q.options())).squeeze(1);
  torch::Tensor constant = (degree * neg_entropy).sum();
  torch::Tensor cross = (agg_q * torch::log_softmax(student, 1)).sum();
  return (constant - cross) / n;
}

torch::Tensor EdgeDifferenceKl(const torch::Tensor& student, const torch::Tensor& teacher, const GraphView& graph,
                               double tau) {
  TORCH_CHECK(student.sizes() == teacher.sizes() && student.size(0) == graph.num_nodes(), "EdgeDifferenceKl: student ",
              student.sizes(), ", teacher ", teacher.sizes(), " on ", graph.num_nodes(), " nodes");
  const CsrPattern& a = graph.adjacency();
  if (a.nnz() == 0) return student.sum() * 0;
  const torch::Tensor src = a.row_index(), dst = a.col();
  const torch::Tensor log_p_student =
      torch::log_softmax((student.index_select(0, src) - student.index_select(0, dst)).abs() / tau, 1);
  const torch::Tensor t = teacher.detach();
  const torch::Tensor log_p_teacher = torch::log_softmax((t.index_select(0, src) - t.index_select(0, dst)).abs() / tau, 1);
  return (log_p_teacher.exp() * (log_p_teacher - log_p_student)).sum() / static_cast<double>(a.nnz());
}

namespace {

// Rows per block of the N x N product: about 64K entries (256 KB), so a block stays in cache
// between the product and its elementwise pass.
int64_t GramBlockRows(int64_t n) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, n)); }

// sum_{u,v} sigmoid(z_u . z_v)^2 over all N^2 pairs. Neither pass keeps the N x N matrix: the
// backward pass recomputes each block, and by symmetry d/dz_u = 2 sum_v f'(z_u . z_v) z_v with
// f'(m) = 2 sigmoid(m)^2 (1 - sigmoid(m)). Once differentiable (no create_graph). The blocks suit a
// CPU cache; on a GPU they would be too small to be fast.
class SigmoidGramSquareSum : public torch::autograd::Function<SigmoidGramSquareSum> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& z) {
    ctx->save_for_backward({z});
    const int64_t n = z.size(0), block = GramBlockRows(n);
    const torch::Tensor zt = z.t().contiguous();
    torch::Tensor total = torch::zeros({}, z.options().dtype(torch::kDouble));  // one sync, at the end
    for (int64_t r = 0; r < n; r += block) {
      torch::Tensor s = z.slice(0, r, std::min(n, r + block)).mm(zt).sigmoid_();
      total += s.mul_(s).sum(torch::kDouble);
    }
    return total.to(z.scalar_type());
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_out) {
    const torch::Tensor z = ctx->get_saved_variables()[0];
    const int64_t n = z.size(0), block = GramBlockRows(n);
    const torch::Tensor zt = z.t().contiguous();
    torch::Tensor dz = torch::empty_like(z);
    for (int64_t r = 0; r < n; r += block) {
      const int64_t end = std::min(n, r + block);
      torch::Tensor s = z.slice(0, r, end).mm(zt).sigmoid_();
      // 2 * f'(m) = 4 s^2 (1 - s), in place.
      torch::Tensor g = (1 - s).mul_(s).mul_(s);
      torch::Tensor rows = dz.slice(0, r, end);
      torch::mm_out(rows, g, z);
    }
    return {dz.mul_(grad_out[0] * 4)};
  }
};

}  // namespace

torch::Tensor InnerProductReconstructionMse(const torch::Tensor& z, const GraphView& graph) {
  const int64_t n = z.size(0);
  TORCH_CHECK(z.dim() == 2 && n == graph.num_nodes(), "InnerProductReconstructionMse: z ", z.sizes(),
              " for a graph of ", graph.num_nodes(), " nodes");
  const torch::Tensor squares = SigmoidGramSquareSum::apply(z);
  // The stored entries (u, v), u != v, of the undirected graph (both directions are stored).
  const graph::CsrGraph& g = graph.graph();
  torch::Tensor row = torch::repeat_interleave(torch::arange(n, torch::kInt64),
                                               g.row_ptr().slice(0, 1) - g.row_ptr().slice(0, 0, n));
  torch::Tensor col = g.col();
  torch::Tensor off_diagonal = row != col;
  row = row.masked_select(off_diagonal).to(z.device());
  col = col.masked_select(off_diagonal).to(z.device());
  torch::Tensor on_edges = torch::sigmoid((z.index_select(0, row) * z.index_select(0, col)).sum(1)).sum();
  const double edges = static_cast<double>(row.size(0));
  return (squares - 2 * on_edges + edges) / (static_cast<double>(n) * static_cast<double>(n));
}

torch::Tensor CosineDistance(const torch::Tensor& a, const torch::Tensor& b,
                             const torch::Tensor& mask) {
  torch::Tensor x = Rows(a, mask), y = Rows(b, mask);
  if (x.size(0) == 0) return ZeroWithGrad(a);
  return (1 - torch::cosine_similarity(x, y, 1, 1e-8)).mean();
}

torch::Tensor InfoNce(const torch::Tensor& anchor, const torch::Tensor& positive, double tau,
                      const torch::Tensor& negatives) {
  torch::Tensor a = torch::nn::functional::normalize(anchor, torch::nn::functional::NormalizeFuncOptions().dim(1));
  torch::Tensor p = torch::nn::functional::normalize(positive, torch::nn::functional::NormalizeFuncOptions().dim(1));
  torch::Tensor logits = torch::matmul(a, p.t()) / tau;
  if (negatives.defined()) {
    torch::Tensor ng = torch::nn::functional::normalize(negatives, torch::nn::functional::NormalizeFuncOptions().dim(1));
    logits = torch::cat({logits, torch::matmul(a, ng.t()) / tau}, 1);
  }
  torch::Tensor target = torch::arange(a.size(0), torch::TensorOptions(torch::kInt64).device(a.device()));
  return torch::nn::functional::cross_entropy(logits, target);
}

torch::Tensor GeneratorDiversity(const torch::Tensor& noise, const torch::Tensor& x) {
  TORCH_CHECK(noise.dim() == 2 && x.dim() == 2 && noise.size(0) == x.size(0),
              "GeneratorDiversity: noise and x need the same rows");
  const torch::Tensor z = noise.detach();
  const torch::Tensor noise_dist = torch::cdist(z, z, 2.0).pow(2) / static_cast<double>(z.size(1));
  const torch::Tensor x_dist = x.device().is_cpu() && x.scalar_type() == torch::kFloat
                                   ? PairwiseMeanAbsDiff(x)
                                   : torch::cdist(x, x, 1.0) / static_cast<double>(x.size(1));
  return torch::exp(torch::mean(-noise_dist * x_dist));
}

torch::Tensor ModelContrastive(const torch::Tensor& z, const torch::Tensor& positive,
                               const torch::Tensor& negative, double tau, const torch::Tensor& mask) {
  namespace F = torch::nn::functional;
  const auto cos = F::CosineSimilarityFuncOptions().dim(1);
  const torch::Tensor pos = F::cosine_similarity(z, positive.detach(), cos);
  const torch::Tensor neg = F::cosine_similarity(z, negative.detach(), cos);
  const torch::Tensor logits = torch::stack({pos, neg}, 1) / tau;
  const torch::Tensor zeros = torch::zeros({z.size(0)}, z.options().dtype(torch::kLong));
  return MaskedCrossEntropy(logits, zeros, mask);
}

ClassPrototypes ComputeClassPrototypes(const torch::Tensor& embedding, const torch::Tensor& labels,
                                       const torch::Tensor& mask, int64_t num_classes) {
  const torch::Tensor index = mask.nonzero().squeeze(1);
  const torch::Tensor y = labels.index_select(0, index);
  ClassPrototypes out;
  out.counts = torch::zeros({num_classes}, embedding.options()).index_add_(
      0, y, torch::ones({y.size(0)}, embedding.options()));
  const torch::Tensor sums = torch::zeros({num_classes, embedding.size(1)}, embedding.options())
                                 .index_add_(0, y, embedding.index_select(0, index));
  out.prototypes = sums / out.counts.clamp_min(1).unsqueeze(1);
  return out;
}

torch::Tensor PrototypeAlignment(const torch::Tensor& embedding, const torch::Tensor& labels,
                                 const torch::Tensor& mask, const torch::Tensor& prototypes,
                                 const torch::Tensor& present) {
  torch::Tensor total = torch::zeros({}, embedding.options());
  for (int64_t c = 0; c < prototypes.size(0); ++c) {
    if (!present[c].item<bool>()) continue;
    const torch::Tensor index = mask.logical_and(labels.eq(c)).nonzero().squeeze(1);
    if (index.numel() == 0) continue;
    const torch::Tensor rows = embedding.index_select(0, index);
    total = total + (rows - prototypes[c].unsqueeze(0)).pow(2).mean();
  }
  return total;
}

}  // namespace fgl::nn
