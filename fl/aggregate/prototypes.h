// Class-prototype aggregation (FedProto; FedTGP starts from it): the server's global prototype
// per class from the clients' local ones.
#ifndef FGL_FL_AGGREGATE_PROTOTYPES_H_
#define FGL_FL_AGGREGATE_PROTOTYPES_H_

#include <torch/torch.h>

#include <vector>

namespace fgl::fl {

struct GlobalPrototypes {
  torch::Tensor prototypes;  // [C, D]
  torch::Tensor present;     // bool [C]: some client holds the class
};

// FedProto's Eq. 6: the mean of the clients' prototypes of class c weighted by their node counts
// of c (float [C] each); a class no client holds stays absent (zeros, present false).
GlobalPrototypes CountWeightedPrototypes(const std::vector<torch::Tensor>& prototypes,
                                         const std::vector<torch::Tensor>& counts);

// OpenFGL's FedProto server: Σ_k (n_k / Σ n) · prototypes_k for every class, n_k the client's node
// count, a client without the class contributing its zero prototype; every class present.
GlobalPrototypes ClientSizeWeightedPrototypes(const std::vector<torch::Tensor>& prototypes,
                                              const std::vector<double>& sizes);

}  // namespace fgl::fl

#endif  // FGL_FL_AGGREGATE_PROTOTYPES_H_
