// Test helper: a tensor's values as a std::vector, for gmock matchers (ElementsAre, ...).
#ifndef FGL_GRAPH_TESTING_TENSOR_VALUES_H_
#define FGL_GRAPH_TESTING_TENSOR_VALUES_H_

#include <torch/torch.h>

#include <vector>

namespace fgl::graph::testing {

// Values of `t` in row-major order; T must match t's dtype.
template <typename T>
std::vector<T> Vec(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
}

}  // namespace fgl::graph::testing

#endif  // FGL_GRAPH_TESTING_TENSOR_VALUES_H_
