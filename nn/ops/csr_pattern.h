// The sparsity pattern of a CSR matrix (rows x cols) with its transpose and row index built once
// on first use. Values are passed separately, so one pattern serves fixed weights (GCN) and
// learned ones (GAT attention) alike.
#ifndef FGL_NN_OPS_CSR_PATTERN_H_
#define FGL_NN_OPS_CSR_PATTERN_H_

#include <torch/torch.h>

#include <memory>
#include <mutex>

#include "absl/status/statusor.h"

namespace fgl::nn {

class CsrPattern {
 public:
  // Checks row_ptr int64 [rows + 1] from 0, non-decreasing; col int64 [nnz] in [0, cols).
  static absl::StatusOr<CsrPattern> Create(int64_t rows, int64_t cols, torch::Tensor row_ptr,
                                           torch::Tensor col);
  CsrPattern() = default;

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t nnz() const { return col_.defined() ? col_.size(0) : 0; }
  const torch::Tensor& row_ptr() const { return row_ptr_; }
  const torch::Tensor& col() const { return col_; }

  // The row of every entry, int64 [nnz]; built once.
  const torch::Tensor& row_index() const;

  // The transposed pattern and `perm`, int64 [nnz]: entry i of the transpose is entry perm[i] of
  // this pattern, so transposed values are values.index_select(0, perm). Built once.
  struct Transposed;
  const Transposed& transposed() const;

  // values.index_select(0, transposed().perm). The last result for values without a gradient is
  // kept with its input (and the input's version), so a constant tensor (features, a normalised
  // adjacency) is permuted once
  // rather than at every backward pass: the gather's random reads were a sixth of a one-thread
  // Physics GCN epoch. Thread-safe.
  torch::Tensor TransposedValues(const torch::Tensor& values) const;

  // The same pattern with index tensors on `device` (caches are rebuilt there on first use).
  CsrPattern To(torch::Device device) const;

 private:
  CsrPattern(int64_t rows, int64_t cols, torch::Tensor row_ptr, torch::Tensor col);
  struct Cache;
  int64_t rows_ = 0, cols_ = 0;
  torch::Tensor row_ptr_, col_;
  std::shared_ptr<Cache> cache_;
};

struct CsrPattern::Transposed {
  torch::Tensor row_ptr, col, perm;
};

}  // namespace fgl::nn

#endif  // FGL_NN_OPS_CSR_PATTERN_H_
