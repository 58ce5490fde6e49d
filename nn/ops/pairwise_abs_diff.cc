#include "nn/ops/pairwise_abs_diff.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fgl::nn {
namespace {

// acc[j] += |a_t - c[j]| for the pairs (i, j) of one row i at one feature t. Each pair keeps its
// own accumulator and adds its features in ascending order, so every sum is rounded exactly as a
// per-pair loop would round it, while the loop runs across pairs in vector lanes. (A per-pair
// float sum cannot be vectorised without reordering it.)
__attribute__((target_clones("avx512f", "avx2", "default")))
void AddAbsDiffAcrossPairs(float a_t, const float* __restrict c, int64_t n, float* __restrict acc) {
  for (int64_t j = 0; j < n; ++j) acc[j] += std::fabs(a_t - c[j]);
}

// oa += w sign(a - c), oc -= w sign(a - c); branch-free so that it vectorises.
__attribute__((target_clones("avx512f", "avx2", "default")))
void AddSigned(const float* __restrict a, const float* __restrict c, float w, int64_t f,
               float* __restrict oa, float* __restrict oc) {
  for (int64_t t = 0; t < f; ++t) {
    const float diff = a[t] - c[t];
    const float s = w * (static_cast<float>(diff > 0.0f) - static_cast<float>(diff < 0.0f));
    oa[t] += s;
    oc[t] -= s;
  }
}

class PairwiseMeanAbsDiffFunction : public torch::autograd::Function<PairwiseMeanAbsDiffFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    const torch::Tensor xc = x.contiguous();
    ctx->save_for_backward({xc});
    const int64_t b = xc.size(0), f = xc.size(1);
    torch::Tensor d = torch::zeros({b, b}, xc.options());
    // Features-major copy: row t holds feature t of every node, so the pairs (i, i+1..b-1) of
    // one feature are contiguous.
    const torch::Tensor xt = xc.t().contiguous();
    const float* xp = xc.data_ptr<float>();
    const float* tp = xt.data_ptr<float>();
    float* dp = d.data_ptr<float>();
    std::vector<float> acc(b);
    for (int64_t i = 0; i + 1 < b; ++i) {
      const int64_t n = b - i - 1;
      std::fill(acc.begin(), acc.begin() + n, 0.0f);
      for (int64_t t = 0; t < f; ++t) AddAbsDiffAcrossPairs(xp[i * f + t], tp + t * b + i + 1, n, acc.data());
      for (int64_t j = i + 1; j < b; ++j) dp[i * b + j] = dp[j * b + i] = acc[j - i - 1] / static_cast<float>(f);
    }
    return d;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    const int64_t b = x.size(0), f = x.size(1);
    const torch::Tensor g = ((grads[0] + grads[0].t()) / static_cast<double>(f)).contiguous();
    torch::Tensor dx = torch::zeros_like(x);
    const float* xp = x.data_ptr<float>();
    const float* gp = g.data_ptr<float>();
    float* out = dx.data_ptr<float>();
    for (int64_t i = 0; i < b; ++i) {
      for (int64_t j = i + 1; j < b; ++j) {
        if (gp[i * b + j] != 0) AddSigned(xp + i * f, xp + j * f, gp[i * b + j], f, out + i * f, out + j * f);
      }
    }
    return {dx};
  }
};

}  // namespace

torch::Tensor PairwiseMeanAbsDiff(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat && x.device().is_cpu(),
              "PairwiseMeanAbsDiff: float32 [B, F] on the CPU");
  return PairwiseMeanAbsDiffFunction::apply(x);
}

}  // namespace fgl::nn
