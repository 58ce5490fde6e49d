// A client with two models trained together by mutual learning each round: a private model of
// its own architecture (the one scored) and a shared model that alone travels and is averaged
// (FML's meme, FedKD's mentee). A method supplies only the two losses.
#ifndef FGL_FL_MUTUAL_CLIENT_H_
#define FGL_FL_MUTUAL_CLIENT_H_

#include <memory>
#include <string>

#include "fl/local_model.h"

namespace fgl::fl {

// `config` with the shared model's spec: what the averaging server builds.
MethodConfig SharedModelConfig(const MethodConfig& config, const std::string& shared_model_spec);

class MutualClient final : public ClientAlgorithm {
 public:
  // Each model's loss given both outputs; each must use the other's output detached.
  using Losses = std::function<std::pair<torch::Tensor, torch::Tensor>(
      const ClientData& data, const nn::ModelOutput& own, const nn::ModelOutput& shared)>;

  // Both models start from config.seed's initialisation (every client's shared model alike).
  static absl::StatusOr<std::unique_ptr<MutualClient>> Make(std::shared_ptr<const ClientData> data,
                                                            const MethodConfig& config,
                                                            const std::string& shared_model_spec, Losses losses,
                                                            std::string type);

  const nn::GnnModel& own_model() const { return own_->model(); }
  const nn::GnnModel& shared_model() const { return shared_->model(); }

  // Loads the server's shared model, trains both (LocalModel::TrainMutually) and replies with
  // the shared model only.
  absl::StatusOr<proto::Message> Train(const proto::Message& global, const RoundInfo& round) override;
  // The private model, whatever the server broadcast.
  absl::StatusOr<torch::Tensor> Predict(const proto::Message*) override { return own_->Predict(); }
  // Both models and both Adam states in one message, the shared model's prefixed "shared.".
  absl::StatusOr<proto::Message> SaveState() const override;
  absl::Status RestoreState(const proto::Message& state) override;

 private:
  MutualClient(std::shared_ptr<const ClientData> data, const MethodConfig& config, Losses losses, std::string type,
               std::unique_ptr<LocalModel> own, std::unique_ptr<LocalModel> shared)
      : data_(std::move(data)), config_(config), losses_(std::move(losses)), type_(std::move(type)),
        own_(std::move(own)), shared_(std::move(shared)) {}

  std::shared_ptr<const ClientData> data_;
  MethodConfig config_;
  Losses losses_;
  std::string type_;
  std::unique_ptr<LocalModel> own_, shared_;
};

}  // namespace fgl::fl

#endif  // FGL_FL_MUTUAL_CLIENT_H_
