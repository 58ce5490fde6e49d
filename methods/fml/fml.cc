// FML (Shen et al., "Federated Mutual Learning", FITEE 2023) for FGL (note §A.4). Each client
// keeps a private model of its own architecture and a shared meme model. Each round it:
//   1. loads the server's meme model,
//   2. trains both at once by deep mutual learning on its training nodes:
//        private: α·CE + (1 − α)·KL(p_meme ‖ p_private),  meme: β·CE + (1 − β)·KL(p_private ‖ p_meme),
//   3. replies with the meme model only.
// The server averages the meme models (FedAvg, node counts). Each client's private model is scored.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "methods/fml/fml.pb.h"
#include "nn/losses/losses.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fml {
namespace {

constexpr char kType[] = "fml.meme";
constexpr char kMemePrefix[] = "meme.";

fl::MethodConfig MemeConfig(const fl::MethodConfig& config, const FmlParams& params) {
  fl::MethodConfig meme = config;
  meme.model_spec = params.meme_model();
  meme.shared_group = "";
  return meme;
}

class FmlClient final : public fl::ClientAlgorithm {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(FmlParams params, fl::MethodParams<FmlParams>(config));
    FGL_ASSIGN_OR_RETURN(auto own, fl::LocalModel::Create(data, config, config.seed));
    FGL_ASSIGN_OR_RETURN(auto meme, fl::LocalModel::Create(data, MemeConfig(config, params), config.seed));
    return std::unique_ptr<fl::ClientAlgorithm>(
        new FmlClient(std::move(data), config, std::move(params), std::move(own), std::move(meme)));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, meme_->Parameters()));
    const double a = params_.private_ce_weight(), b = params_.meme_ce_weight();
    const torch::Tensor& y = data_->labels;
    const torch::Tensor& mask = data_->split.train;
    FGL_RETURN_IF_ERROR(fl::LocalModel::TrainMutually(
        *own_, *meme_, config_.local_epochs, round.seed, [&](const nn::ModelOutput& own, const nn::ModelOutput& meme) {
          torch::Tensor own_loss = a * nn::MaskedCrossEntropy(own.logits, y, mask) +
                                   (1 - a) * nn::KlDivergence(own.logits, meme.logits.detach(), 1.0, mask);
          torch::Tensor meme_loss = b * nn::MaskedCrossEntropy(meme.logits, y, mask) +
                                    (1 - b) * nn::KlDivergence(meme.logits, own.logits.detach(), 1.0, mask);
          return std::make_pair(own_loss, meme_loss);
        }));
    fl::proto::Message reply = fl::ModelReply(meme_->Parameters(), data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTrainLoss(own_->last_loss(), &reply);
    return reply;
  }

  // The private model, whatever the server broadcast.
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message*) override { return own_->Predict(); }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message state = own_->SaveState();
    meme_->AddState(kMemePrefix, &state);
    return state;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    FGL_RETURN_IF_ERROR(own_->RestoreState(state));
    return meme_->RestoreState(state, kMemePrefix);
  }

 private:
  FmlClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config, FmlParams params,
            std::unique_ptr<fl::LocalModel> own, std::unique_ptr<fl::LocalModel> meme)
      : data_(std::move(data)), config_(config), params_(std::move(params)), own_(std::move(own)),
        meme_(std::move(meme)) {}

  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  FmlParams params_;
  std::unique_ptr<fl::LocalModel> own_, meme_;
};

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FmlParams params, fl::MethodParams<FmlParams>(config));
  return fl::MakeModelAverageServer(MemeConfig(config, params), kType);
}

absl::Status Validate(const FmlParams& p) {
  for (const auto& [name, w] : {std::pair<const char*, double>{"private_ce_weight", p.private_ce_weight()},
                                {"meme_ce_weight", p.meme_ce_weight()}}) {
    if (!(w >= 0 && w <= 1)) return absl::InvalidArgumentError(absl::StrCat("FmlParams.", name, " must be in [0, 1], not ", w));
  }
  if (p.meme_model().empty()) return absl::InvalidArgumentError("FmlParams.meme_model is empty");
  return absl::OkStatus();
}

}  // namespace

FGL_REGISTER_METHOD("fml", &FmlClient::Make, MakeServer, {fl::TypedParams(&Validate)});

}  // namespace fgl::methods::fml
