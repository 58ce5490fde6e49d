#include "methods/fedtad/generator.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fgl::methods::fedtad {

ConditionalGeneratorImpl::ConditionalGeneratorImpl(int64_t noise_dim, int64_t num_classes,
                                                   int64_t num_features) {
  label_embedding_ = register_module("label_embedding", torch::nn::Embedding(num_classes, num_classes));
  l1_ = register_module("l1", torch::nn::Linear(num_classes + noise_dim, 64));
  l2_ = register_module("l2", torch::nn::Linear(64, 128));
  l3_ = register_module("l3", torch::nn::Linear(128, 256));
  out_ = register_module("out", torch::nn::Linear(256, num_features));
}

torch::Tensor ConditionalGeneratorImpl::forward(const torch::Tensor& z, const torch::Tensor& labels) {
  torch::Tensor h = torch::cat({label_embedding_->forward(labels), z}, 1);
  h = torch::tanh(l1_->forward(h));
  h = torch::tanh(l2_->forward(h));
  h = torch::tanh(l3_->forward(h));
  return out_->forward(h);
}

torch::Tensor PseudoLabels(int64_t num_nodes, int64_t num_classes) {
  TORCH_CHECK(num_classes >= 1 && num_nodes >= num_classes, "PseudoLabels: need B >= C >= 1");
  const int64_t per = num_nodes / num_classes;
  std::vector<int64_t> y(num_nodes, num_classes - 1);
  for (int64_t c = 0; c < num_classes; ++c) {
    for (int64_t i = 0; i < per; ++i) y[c * per + i] = c;
  }
  return torch::tensor(y, torch::kLong);
}

absl::StatusOr<graph::CsrGraph> KnnPseudoGraph(const torch::Tensor& x, int64_t k,
                                               float self_loop_weight) {
  if (x.dim() != 2 || x.size(0) < 1 || k < 1) {
    return absl::InvalidArgumentError(absl::StrCat("KnnPseudoGraph: features [", absl::StrJoin(x.sizes(), ","), "], k ", k));
  }
  const int64_t b = x.size(0);
  torch::Tensor nearest;
  {
    torch::NoGradGuard no_grad;
    torch::Tensor u = x.detach().to(torch::kCPU, torch::kFloat);
    u = u / u.norm(2, 1, true).clamp_min(1e-12);
    nearest = std::get<1>(torch::topk(u.matmul(u.t()), std::min(k, b), 1)).contiguous();
  }
  std::vector<std::set<int64_t>> rows(b);
  const int64_t* np = nearest.data_ptr<int64_t>();
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t t = 0; t < nearest.size(1); ++t) {
      const int64_t j = np[i * nearest.size(1) + t];
      if (j == i) continue;
      rows[i].insert(j);
      rows[j].insert(i);
    }
  }
  std::vector<int64_t> row_ptr(1, 0), col;
  std::vector<float> weight;
  for (int64_t i = 0; i < b; ++i) {
    rows[i].insert(i);
    for (int64_t j : rows[i]) {
      col.push_back(j);
      weight.push_back(j == i ? self_loop_weight : 1.0f);
    }
    row_ptr.push_back(static_cast<int64_t>(col.size()));
  }
  return graph::CsrGraph::Create(torch::tensor(row_ptr, torch::kLong), torch::tensor(col, torch::kLong),
                                 torch::tensor(weight, torch::kFloat));
}

}  // namespace fgl::methods::fedtad
