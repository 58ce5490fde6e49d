// The client side of prototype methods (FedProto, FedTGP): local training regularised toward the
// server's class prototypes, then the local prototypes as the only reply. Any architecture
// works as long as every client's embedding has the same width.
#ifndef FGL_FL_PROTOTYPE_CLIENT_H_
#define FGL_FL_PROTOTYPE_CLIENT_H_

#include <memory>
#include <string>

#include "fl/local_model.h"

namespace fgl::fl {

// Message tensors: the server sends "prototypes" [C, D] and "present" [C] (1 where the class has
// a global prototype); a client replies "prototypes" [C, D] and "counts" [C] (its training nodes
// per class; a zero row where it has none).
inline constexpr char kPrototypesTensor[] = "prototypes";
inline constexpr char kPresentTensor[] = "present";
inline constexpr char kCountsTensor[] = "counts";

class PrototypeClient final : public ModelClient {
 public:
  // `proto_weight` λ: CE + λ·Σ_c MSE(embeddings of the class-c training nodes, prototype c).
  PrototypeClient(std::shared_ptr<const ClientData> data, const MethodConfig& config,
                  std::unique_ptr<LocalModel> model, double proto_weight, std::string type);
  static absl::StatusOr<std::unique_ptr<ClientAlgorithm>> Make(std::shared_ptr<const ClientData> data,
                                                               const MethodConfig& config, double proto_weight,
                                                               const std::string& type);

  absl::StatusOr<proto::Message> Train(const proto::Message& global, const RoundInfo& round) override;
  // Always its own model: the server's message holds prototypes, not weights.
  absl::StatusOr<torch::Tensor> Predict(const proto::Message*) override { return model_->Predict(); }

 private:
  double proto_weight_;
  std::string type_;
};

}  // namespace fgl::fl

#endif  // FGL_FL_PROTOTYPE_CLIENT_H_
