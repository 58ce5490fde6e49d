#include "nn/ops/spmm.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

namespace fgl::nn {
namespace {

// One output row, o = sum_e v[e] * x[col[e], :], in column blocks of 64 whose partial sums stay
// in registers (a load-add-store per product otherwise makes the loop L1-bound). Compiled for
// AVX-512F, AVX2 and baseline x86-64 and picked at load time by CPU feature (an `arch=` clone is
// picked by CPU model, so an AMD CPU with AVX-512 ran the scalar one). The BUILD file turns off
// FMA contraction: every clone rounds each product and each sum as the scalar loop does, so the
// result does not depend on the CPU.
__attribute__((target_clones("avx512f", "avx2", "default")))
void CsrRow(const int64_t* __restrict col, const float* __restrict v, int64_t begin, int64_t end,
            const float* __restrict x, int64_t f, float* __restrict o) {
  constexpr int64_t kBlock = 64;
  int64_t j0 = 0;
  for (; j0 + kBlock <= f; j0 += kBlock) {
    float acc[kBlock] = {};
    for (int64_t e = begin; e < end; ++e) {
      const float w = v[e];
      const float* __restrict xr = x + col[e] * f + j0;
      for (int64_t j = 0; j < kBlock; ++j) acc[j] += w * xr[j];
    }
    for (int64_t j = 0; j < kBlock; ++j) o[j0 + j] = acc[j];
  }
  if (j0 == f) return;
  for (int64_t j = j0; j < f; ++j) o[j] = 0.0f;
  for (int64_t e = begin; e < end; ++e) {
    const float w = v[e];
    const float* __restrict xr = x + col[e] * f;
    for (int64_t j = j0; j < f; ++j) o[j] += w * xr[j];
  }
}

// Rows per thread for a row loop doing about `f` multiply-adds per entry of a CSR with `rows`
// rows ending at rp[rows] entries: at least about 2^20 multiply-adds per thread, below which the
// fork and join cost more than they save (Cora's adjacency, 13k entries x 64 columns, stays on
// one thread).
int64_t RowGrain(const int64_t* rp, int64_t rows, int64_t f) {
  const int64_t entries_per_row = rows > 0 ? std::max<int64_t>(1, rp[rows] / rows) : 1;
  return std::max<int64_t>(1, (int64_t{1} << 20) / (std::max<int64_t>(1, f) * entries_per_row));
}

// out[r, :] = sum_{e in row r} v[e] * x[col[e], :]; each row is written by one thread in a fixed
// order, so the result is bit-identical for any thread count.
void CsrTimesDense(const int64_t* rp, const int64_t* col, const float* v, const float* x,
                   int64_t rows, int64_t f, float* out) {
  at::parallel_for(0, rows, RowGrain(rp, rows, f), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) CsrRow(col, v, rp[r], rp[r + 1], x, f, out + r * f);
  });
}

torch::Tensor Forward(const CsrPattern& p, const torch::Tensor& values, const torch::Tensor& x) {
  torch::Tensor xc = x.contiguous();
  torch::Tensor vc = values.contiguous();
  torch::Tensor out = torch::empty({p.rows(), x.size(1)}, x.options());
  CsrTimesDense(p.row_ptr().data_ptr<int64_t>(), p.col().data_ptr<int64_t>(), vc.data_ptr<float>(),
                xc.data_ptr<float>(), p.rows(), x.size(1), out.data_ptr<float>());
  return out;
}

// y = A x  =>  dx = Aᵀ dy  and  d values[e] = <dy[row(e)], x[col(e)]>.
// backward returns one gradient per forward input: {-, d_values, d_x, -}.
class SpmmFunction : public torch::autograd::Function<SpmmFunction> {
 public:
  // needs_dx: grad mode was on and x requires grad (grad mode is always off in here).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const CsrPattern* pattern,
                               torch::Tensor values, torch::Tensor x, bool needs_dx) {
    // Save the index tensors themselves (not the pattern), so backward never outlives them.
    const CsrPattern::Transposed& t = pattern->transposed();
    ctx->saved_data["row_ptr"] = pattern->row_ptr();
    ctx->saved_data["col"] = pattern->col();
    ctx->saved_data["t_row_ptr"] = t.row_ptr;
    ctx->saved_data["t_col"] = t.col;
    // Looked up now, while the pattern is alive: it keeps the last result, so constant values
    // are permuted once, not at every backward pass.
    if (needs_dx) ctx->saved_data["t_values"] = pattern->TransposedValues(values);
    ctx->save_for_backward({values, x});
    return Forward(*pattern, values, x);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::Tensor row_ptr = ctx->saved_data["row_ptr"].toTensor();
    const torch::Tensor col_t = ctx->saved_data["col"].toTensor();
    const torch::Tensor t_row_ptr = ctx->saved_data["t_row_ptr"].toTensor();
    const torch::Tensor t_col = ctx->saved_data["t_col"].toTensor();
    const int64_t rows = row_ptr.size(0) - 1, cols = t_row_ptr.size(0) - 1, nnz = col_t.size(0);
    torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& values = saved[0];
    const torch::Tensor& x = saved[1];
    torch::Tensor dy = grads[0].contiguous();
    torch::Tensor d_values, d_x;
    if (ctx->needs_input_grad(1)) {  // x (tensor inputs only are counted)
      const torch::Tensor tv = ctx->saved_data["t_values"].toTensor();
      d_x = torch::empty_like(x);
      CsrTimesDense(t_row_ptr.data_ptr<int64_t>(), t_col.data_ptr<int64_t>(), tv.data_ptr<float>(),
                    dy.data_ptr<float>(), cols, dy.size(1), d_x.data_ptr<float>());
    }
    if (ctx->needs_input_grad(0)) {  // values
      torch::Tensor xc = x.contiguous();
      d_values = torch::empty({nnz}, values.options());
      const int64_t* rp = row_ptr.data_ptr<int64_t>();
      const int64_t* col = col_t.data_ptr<int64_t>();
      const float* g = dy.data_ptr<float>();
      const float* xs = xc.data_ptr<float>();
      float* dv = d_values.data_ptr<float>();
      const int64_t f = dy.size(1);
      at::parallel_for(0, rows, RowGrain(rp, rows, f), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t e = rp[r]; e < rp[r + 1]; ++e) {
            const float* a = g + r * f;
            const float* b = xs + col[e] * f;
            float s = 0;
            for (int64_t j = 0; j < f; ++j) s += a[j] * b[j];
            dv[e] = s;
          }
        }
      });
    }
    return {torch::Tensor(), d_values, d_x, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor Spmm(const CsrPattern& pattern, const torch::Tensor& values, const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 2 && x.size(0) == pattern.cols(), "Spmm: x must be [", pattern.cols(),
              ", F], got ", x.sizes());
  TORCH_CHECK(values.dim() == 1 && values.size(0) == pattern.nnz(), "Spmm: values must be [",
              pattern.nnz(), "], got ", values.sizes());
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && values.scalar_type() == torch::kFloat32,
              "Spmm: values and x must be float32");
  if (!x.device().is_cpu()) {
    // Device-generic path: gather, scale, scatter; autograd comes from the ops themselves.
    torch::Tensor messages = x.index_select(0, pattern.col()) * values.unsqueeze(1);
    return torch::zeros({pattern.rows(), x.size(1)}, x.options())
        .index_add_(0, pattern.row_index(), messages);
  }
  // Only a pass that will need dx looks up the transposed values.
  return SpmmFunction::apply(&pattern, values, x, torch::GradMode::is_enabled() && x.requires_grad());
}

torch::Tensor SpmmReference(const CsrPattern& pattern, const torch::Tensor& values,
                            const torch::Tensor& x) {
  torch::Tensor index = torch::stack({pattern.row_index(), pattern.col()});
  return torch::sparse_coo_tensor(index, values, {pattern.rows(), pattern.cols()}).mm(x);
}

}  // namespace fgl::nn
