#include "nn/ops/csr_pattern.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace fgl::nn {

struct CsrPattern::Cache {
  std::once_flag row_once, transpose_once;
  torch::Tensor row_index;
  Transposed transposed;
  // The last TransposedValues input (held, so its identity cannot be reused), its version then,
  // and its result.
  absl::Mutex values_mu;
  torch::Tensor values ABSL_GUARDED_BY(values_mu);
  uint32_t values_version ABSL_GUARDED_BY(values_mu) = 0;
  torch::Tensor transposed_values ABSL_GUARDED_BY(values_mu);
};

CsrPattern::CsrPattern(int64_t rows, int64_t cols, torch::Tensor row_ptr, torch::Tensor col)
    : rows_(rows), cols_(cols), row_ptr_(std::move(row_ptr)), col_(std::move(col)),
      cache_(std::make_shared<Cache>()) {}

absl::StatusOr<CsrPattern> CsrPattern::Create(int64_t rows, int64_t cols, torch::Tensor row_ptr,
                                              torch::Tensor col) {
  if (rows < 0 || cols < 0) return absl::InvalidArgumentError("CsrPattern: negative shape");
  if (!row_ptr.defined() || row_ptr.dim() != 1 || row_ptr.scalar_type() != torch::kInt64 ||
      row_ptr.size(0) != rows + 1) {
    return absl::InvalidArgumentError(absl::StrCat("CsrPattern: row_ptr must be int64 [", rows + 1, "]"));
  }
  if (!col.defined() || col.dim() != 1 || col.scalar_type() != torch::kInt64) {
    return absl::InvalidArgumentError("CsrPattern: col must be int64 [nnz]");
  }
  torch::Tensor rp_cpu = row_ptr.to(torch::kCPU).contiguous();
  torch::Tensor col_cpu = col.to(torch::kCPU).contiguous();
  const int64_t* rp = rp_cpu.data_ptr<int64_t>();
  if (rp[0] != 0 || rp[rows] != col.size(0)) {
    return absl::InvalidArgumentError(absl::StrCat("CsrPattern: row_ptr must run from 0 to nnz = ",
                                                   col.size(0)));
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (rp[r + 1] < rp[r]) {
      return absl::InvalidArgumentError(absl::StrCat("CsrPattern: row_ptr decreases at row ", r));
    }
  }
  const int64_t* c = col_cpu.data_ptr<int64_t>();
  for (int64_t e = 0; e < col.size(0); ++e) {
    if (c[e] < 0 || c[e] >= cols) {
      return absl::InvalidArgumentError(
          absl::StrCat("CsrPattern: col[", e, "] = ", c[e], " outside [0, ", cols, ")"));
    }
  }
  return CsrPattern(rows, cols, row_ptr.contiguous(), col.contiguous());
}

const torch::Tensor& CsrPattern::row_index() const {
  std::call_once(cache_->row_once, [&] {
    torch::Tensor counts = row_ptr_.slice(0, 1) - row_ptr_.slice(0, 0, rows_);
    cache_->row_index = torch::repeat_interleave(
        torch::arange(rows_, row_ptr_.options()), counts, /*dim=*/0, /*output_size=*/nnz());
  });
  return cache_->row_index;
}

const CsrPattern::Transposed& CsrPattern::transposed() const {
  std::call_once(cache_->transpose_once, [&] {
    // Counting sort by column: O(nnz + cols), stable, so entries of a transposed row keep the
    // order of their original rows (deterministic sums).
    torch::Tensor rp_cpu = row_ptr_.to(torch::kCPU), col_cpu = col_.to(torch::kCPU);
    const int64_t* rp = rp_cpu.data_ptr<int64_t>();
    const int64_t* c = col_cpu.data_ptr<int64_t>();
    const int64_t n = nnz();
    torch::Tensor t_rp = torch::zeros({cols_ + 1}, torch::kInt64);
    torch::Tensor t_col = torch::empty({n}, torch::kInt64);
    torch::Tensor perm = torch::empty({n}, torch::kInt64);
    int64_t* trp = t_rp.data_ptr<int64_t>();
    int64_t* tc = t_col.data_ptr<int64_t>();
    int64_t* pm = perm.data_ptr<int64_t>();
    for (int64_t e = 0; e < n; ++e) ++trp[c[e] + 1];
    for (int64_t j = 0; j < cols_; ++j) trp[j + 1] += trp[j];
    std::vector<int64_t> fill(trp, trp + cols_);
    for (int64_t r = 0; r < rows_; ++r) {
      for (int64_t e = rp[r]; e < rp[r + 1]; ++e) {
        const int64_t pos = fill[c[e]]++;
        tc[pos] = r;
        pm[pos] = e;
      }
    }
    const torch::Device d = row_ptr_.device();
    cache_->transposed = {t_rp.to(d), t_col.to(d), perm.to(d)};
  });
  return cache_->transposed;
}

torch::Tensor CsrPattern::TransposedValues(const torch::Tensor& values) const {
  const Transposed& t = transposed();
  // Values that carry a gradient (attention weights) are new at every call: not kept, so the
  // cache never holds an autograd graph.
  if (values.requires_grad()) return values.index_select(0, t.perm).contiguous();
  absl::MutexLock lock(&cache_->values_mu);
  if (cache_->values.defined() && cache_->values.unsafeGetTensorImpl() == values.unsafeGetTensorImpl() &&
      cache_->values_version == values._version()) {
    return cache_->transposed_values;
  }
  cache_->values = values;
  cache_->values_version = values._version();
  cache_->transposed_values = values.index_select(0, t.perm).contiguous();
  return cache_->transposed_values;
}

CsrPattern CsrPattern::To(torch::Device device) const {
  return CsrPattern(rows_, cols_, row_ptr_.to(device), col_.to(device));
}

}  // namespace fgl::nn
