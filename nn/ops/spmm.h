// Sparse (CSR) times dense, with autograd: the one message-passing kernel of `nn`.
#ifndef FGL_NN_OPS_SPMM_H_
#define FGL_NN_OPS_SPMM_H_

#include <torch/torch.h>

#include "nn/ops/csr_pattern.h"

namespace fgl::nn {

// Returns A·x, where A is `pattern` with float32 `values` [nnz] and x is float32 [cols, F].
// Differentiable in `values` and `x`. On CPU a row-parallel kernel whose result does not depend
// on the thread count; elsewhere (CUDA) index_add_ with autograd.
// complexity: O(nnz * F) forward, the same again for each gradient.
torch::Tensor Spmm(const CsrPattern& pattern, const torch::Tensor& values, const torch::Tensor& x);

// The reference: torch::sparse_coo_tensor(...).mm(x). Slower; used by tests and benchmarks.
torch::Tensor SpmmReference(const CsrPattern& pattern, const torch::Tensor& values,
                            const torch::Tensor& x);

}  // namespace fgl::nn

#endif  // FGL_NN_OPS_SPMM_H_
