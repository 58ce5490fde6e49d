#include "nn/ops/spmm.h"

#include <ATen/Parallel.h>

#include "gtest/gtest.h"

namespace fgl::nn {
namespace {

// A random n x m CSR pattern with about `per_row` entries per row (sorted, distinct columns).
CsrPattern RandomPattern(int64_t n, int64_t m, int64_t per_row, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<int64_t> rp = {0}, col;
  for (int64_t r = 0; r < n; ++r) {
    torch::Tensor mask = torch::rand({m}) < (static_cast<double>(per_row) / m);
    torch::Tensor cols = mask.nonzero().squeeze(1);
    for (int64_t j = 0; j < cols.size(0); ++j) col.push_back(cols[j].item<int64_t>());
    rp.push_back(col.size());
  }
  return *CsrPattern::Create(n, m, torch::tensor(rp, torch::kInt64), torch::tensor(col, torch::kInt64));
}

// Dense A with autograd through `values`.
torch::Tensor Dense(const CsrPattern& p, const torch::Tensor& values) {
  return torch::zeros({p.rows(), p.cols()}).index_put({p.row_index(), p.col()}, values);
}

TEST(SpmmTest, ForwardAndGradientsMatchDenseAutograd) {
  const CsrPattern p = RandomPattern(40, 30, 4, 1);
  torch::Tensor v = torch::randn({p.nnz()}).requires_grad_(true);
  torch::Tensor x = torch::randn({30, 5}).requires_grad_(true);
  torch::Tensor r = torch::randn({40, 5});
  torch::Tensor y = Spmm(p, v, x);
  (y * r).sum().backward();
  torch::Tensor gv = v.grad().clone(), gx = x.grad().clone();
  v.mutable_grad().zero_();
  x.mutable_grad().zero_();
  torch::Tensor y_ref = torch::matmul(Dense(p, v), x);
  (y_ref * r).sum().backward();
  EXPECT_TRUE(torch::allclose(y, y_ref, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(gv, v.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(gx, x.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(SpmmReference(p, v.detach(), x.detach()), y.detach(), 1e-5, 1e-5));
}

TEST(SpmmTest, TransposeIsExact) {
  // indptr [0, 2, 3, 3, 5] (4 x 3): rows {0: [0, 2], 1: [1], 2: [], 3: [0, 1]}.
  const CsrPattern p = *CsrPattern::Create(4, 3, torch::tensor({0, 2, 3, 3, 5}, torch::kInt64),
                                           torch::tensor({0, 2, 1, 0, 1}, torch::kInt64));
  const CsrPattern::Transposed& t = p.transposed();
  // Columns {0: rows [0, 3], 1: rows [1, 3], 2: rows [0]}.
  EXPECT_TRUE(torch::equal(t.row_ptr, torch::tensor({0, 2, 4, 5}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(t.col, torch::tensor({0, 3, 1, 3, 0}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(t.perm, torch::tensor({0, 3, 2, 4, 1}, torch::kInt64)));
  EXPECT_FALSE(CsrPattern::Create(2, 2, torch::tensor({0, 1, 1}, torch::kInt64),
                                  torch::tensor({5}, torch::kInt64)).ok());
}

// The transposed values are kept for a constant tensor and recomputed for a changed or new one;
// the gradient in x follows the values of each call.
TEST(SpmmTest, TransposedValuesFollowTheValues) {
  const CsrPattern p = RandomPattern(30, 20, 3, 2);
  const torch::Tensor perm = p.transposed().perm;
  torch::Tensor v = torch::randn({p.nnz()});
  const torch::Tensor first = p.TransposedValues(v);
  EXPECT_TRUE(torch::equal(first, v.index_select(0, perm)));
  EXPECT_EQ(p.TransposedValues(v).data_ptr(), first.data_ptr());  // kept
  v.mul_(2);  // in place: a new version
  EXPECT_TRUE(torch::equal(p.TransposedValues(v), v.index_select(0, perm)));
  torch::Tensor w = torch::randn({p.nnz()});
  w.mul_(3);  // the same version as v: identity, not the version alone, must tell them apart
  EXPECT_TRUE(torch::equal(p.TransposedValues(w), w.index_select(0, perm)));
  for (const torch::Tensor& values : {v, w, v}) {
    torch::Tensor x = torch::randn({20, 4}).requires_grad_(true);
    Spmm(p, values, x).sum().backward();
    EXPECT_TRUE(torch::allclose(x.grad(), Dense(p, values).t().matmul(torch::ones({30, 4})), 1e-5, 1e-5));
  }
}

// The plain loop every CPU-specific clone of the kernel must equal bit for bit: per output entry,
// the products rounded and added in the row's entry order (no fused multiply-add).
torch::Tensor PlainLoop(const CsrPattern& p, const torch::Tensor& values, const torch::Tensor& x) {
  const int64_t f = x.size(1);
  torch::Tensor out = torch::zeros({p.rows(), f});
  const int64_t* rp = p.row_ptr().data_ptr<int64_t>();
  const int64_t* col = p.col().data_ptr<int64_t>();
  const float* v = values.data_ptr<float>();
  const float* xs = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < p.rows(); ++r) {
    for (int64_t e = rp[r]; e < rp[r + 1]; ++e) {
      for (int64_t j = 0; j < f; ++j) {
        volatile float product = v[e] * xs[col[e] * f + j];  // volatile: never fused
        o[r * f + j] = o[r * f + j] + product;
      }
    }
  }
  return out;
}

TEST(SpmmTest, EqualsThePlainLoopBitForBit) {
  // 64 + 7 columns: the register-blocked part and the tail.
  const CsrPattern p = RandomPattern(300, 200, 12, 3);
  torch::Tensor v = torch::randn({p.nnz()});
  torch::Tensor x = torch::randn({200, 71});
  EXPECT_TRUE(torch::equal(Spmm(p, v, x), PlainLoop(p, v, x)));
}

// The row loops run under at::parallel_for, which is parallel only because spmm.cc is compiled
// with -fopenmp: the product and both gradients must not depend on the thread count.
TEST(SpmmTest, OneThreadEqualsTwo) {
  const CsrPattern p = RandomPattern(3000, 3000, 8, 2);
  const torch::Tensor v0 = torch::randn({p.nnz()});
  // 3000 rows x 8 entries x 256 columns: about 6M multiply-adds, above the parallel grain.
  const torch::Tensor x0 = torch::randn({3000, 256});
  const torch::Tensor r = torch::randn({3000, 256});
  auto run = [&](int threads) {
    at::set_num_threads(threads);
    torch::Tensor v = v0.clone().requires_grad_(true), x = x0.clone().requires_grad_(true);
    torch::Tensor y = Spmm(p, v, x);
    (y * r).sum().backward();
    return std::vector<torch::Tensor>{y.detach(), v.grad(), x.grad()};
  };
  const std::vector<torch::Tensor> one = run(1), two = run(2);
  at::set_num_threads(1);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], two[i])) << i;
}

}  // namespace
}  // namespace fgl::nn
