// The client side of prototype methods (FedProto, FedTGP): local training regularised toward the
// server's class prototypes, then the local prototypes as the only reply. Any architecture
// works as long as every client's embedding has the same width.
#ifndef FGL_FL_PROTOTYPE_CLIENT_H_
#define FGL_FL_PROTOTYPE_CLIENT_H_

#include <memory>
#include <string>

#include "fl/aggregate/prototypes.h"
#include "fl/local_model.h"
#include "nn/losses/losses.h"

namespace fgl::fl {

// Message tensors: the server sends "prototypes" [C, D] and "present" [C] (1 where the class has
// a global prototype); a client replies "prototypes" [C, D] and "counts" [C] (its training nodes
// per class; a zero row where it has none).
inline constexpr char kPrototypesTensor[] = "prototypes";
inline constexpr char kPresentTensor[] = "present";
inline constexpr char kCountsTensor[] = "counts";

// The server's prototype message (a broadcast, or a checkpoint's part): "prototypes" and
// "present" when `global` holds any, nothing else.
proto::Message PrototypeMessage(const GlobalPrototypes& global, int round, const std::string& type);
// The prototypes a PrototypeMessage carries; empty when it carries none.
absl::StatusOr<GlobalPrototypes> ReadGlobalPrototypes(const proto::Message& message);

// A client's reply, checked: finite prototypes [num_classes, D] (D = `dim` unless 0) and
// non-negative counts [num_classes]. InvalidArgument naming `method` and the sender otherwise.
absl::StatusOr<nn::ClassPrototypes> ReadLocalPrototypes(const proto::Message& reply, int64_t num_classes, int64_t dim,
                                                        const std::string& method);

class PrototypeClient final : public ModelClient {
 public:
  // `proto_weight` λ: CE + λ·Σ_c MSE(embeddings of the class-c training nodes, prototype c).
  // `embedding_dropout` > 0 applies dropout to those embeddings first (OpenFGL's GCN returns its
  // hidden layer after the model's dropout; nn::ModelOutput::embedding is taken before it).
  PrototypeClient(std::shared_ptr<const ClientData> data, const MethodConfig& config,
                  std::unique_ptr<LocalModel> model, double proto_weight, std::string type,
                  double embedding_dropout = 0);
  static absl::StatusOr<std::unique_ptr<ClientAlgorithm>> Make(std::shared_ptr<const ClientData> data,
                                                               const MethodConfig& config, double proto_weight,
                                                               const std::string& type, double embedding_dropout = 0);

  absl::StatusOr<proto::Message> Train(const proto::Message& global, const RoundInfo& round) override;
  // Always its own model: the server's message holds prototypes, not weights.
  absl::StatusOr<torch::Tensor> Predict(const proto::Message*) override { return model_->Predict(); }

 private:
  double proto_weight_;
  std::string type_;
  double embedding_dropout_;
};

}  // namespace fgl::fl

#endif  // FGL_FL_PROTOTYPE_CLIENT_H_
