// AdaFGL's step 2 on one client (OpenFGL's AdaFGLModel): fixed inputs computed once from the
// federated knowledge extractor, and the homophilous and heterophilous propagation modules.
#ifndef FGL_METHODS_ADAFGL_PERSONALISATION_H_
#define FGL_METHODS_ADAFGL_PERSONALISATION_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "graph/csr_graph.h"
#include "methods/adafgl/adafgl.pb.h"

namespace fgl::methods::adafgl {

// The dense adjacency of `g` [N, N] float: A[u, v] += 1 per stored entry (u, v) (OpenFGL's
// adj_initialize: scipy sums duplicate entries).
torch::Tensor DenseAdjacency(const graph::CsrGraph& g);

// The random draws of step 2's set-up on client `client` of a run with seed `seed` (the client's
// MethodConfig seed), each from its own stream (the differential test's trace re-draws them):
// the ids of the training nodes (`train`: bool [N]) in the shuffled order whose first half seeds
// label propagation, and the seed of the personalised modules' initialisation.
std::vector<int64_t> LabelPropagationOrder(const torch::Tensor& train, uint64_t seed, int client);
uint64_t ModuleInitSeed(uint64_t seed, int client);

// D^{r−1} (A + I) D^{−r} for a dense non-negative A [N, N], D the row sums of A + I.
torch::Tensor NormalisedAdjacency(const torch::Tensor& a, double r);

// Cosine similarity of the rows of softmax(x) with a zero diagonal (OpenFGL's getre_scale) [N, N].
torch::Tensor SoftmaxCosine(const torch::Tensor& x);

// The homophily reliability: label propagation from a random half of the training nodes, scored
// as accuracy on the other half (OpenFGL's NonParaLP). `train_order` is a permutation of the
// training nodes' ids; its first half seeds the propagation.
double PropagationReliability(const torch::Tensor& adjacency, const torch::Tensor& labels, int64_t num_classes,
                              const torch::Tensor& train_order, const torch::Tensor& unlabelled,
                              const AdaFglParams& params);

// What step 2 computes once, at the switch.
struct FixedInputs {
  torch::Tensor features;  // X [N, F]
  torch::Tensor smoothed;  // [X, ÂX, …, Â^K X] on the mixed graph [N, (K+1)F]
  torch::Tensor soft_label;  // softmax of the extractor's logits [N, C]
  double reliability = 0;
};

// The mixed graph α·A + (1 − α)·1[SoftmaxCosine(soft_label) > threshold] and the smoothed features.
torch::Tensor SmoothedFeatures(const torch::Tensor& adjacency, const torch::Tensor& features,
                               const torch::Tensor& soft_label, const AdaFglParams& params);

struct Outputs {
  torch::Tensor homo, original, smooth, propagated;  // logits [N, C] each
};

class PersonalisedModules : public torch::nn::Module {
 public:
  // Weights drawn from `init_seed` alone (no global generator: clients may build them concurrently).
  PersonalisedModules(int64_t features, int64_t smoothed_width, int64_t classes, const AdaFglParams& params,
                      uint64_t init_seed);
  Outputs forward(const FixedInputs& in);
  // The step-2 loss: CE of the four heads on the training nodes + MSE(homo logits, soft labels).
  torch::Tensor Loss(const Outputs& out, const FixedInputs& in, const torch::Tensor& labels, const torch::Tensor& train);
  // rel·(σ(homo) + σ(soft_label))/2 + (1 − rel)·(σ(original) + σ(smooth) + σ(propagated))/3.
  static torch::Tensor Predict(const Outputs& out, const FixedInputs& in);

 private:
  struct Layer {
    torch::Tensor weight, bias;  // [in, out], [out]
  };
  Layer MakeLayer(const std::string& name, int64_t in, int64_t out, at::Generator& generator);
  torch::Tensor Mlp(const std::vector<Layer>& layers, torch::nn::PReLU& act, torch::Tensor x);
  torch::Tensor MessagePropagation(const torch::Tensor& z);

  double dropout_;
  std::vector<Layer> homo_, original_, smooth_, propagate_;
  torch::nn::PReLU homo_act_{nullptr}, branch_act_{nullptr}, propagate_act_{nullptr};
};

}  // namespace fgl::methods::adafgl

#endif  // FGL_METHODS_ADAFGL_PERSONALISATION_H_
