// FedKD (Wu et al., "Communication-efficient federated learning via knowledge distillation",
// Nature Communications 2022) for FGL (note §A.4). Each client keeps a private mentor of its own
// architecture and a shared mentee (a 2-layer GCN). Each round it:
//   1. loads the server's mentee,
//   2. trains both at once: each model's loss is its CE plus, scaled by 1/(CE_mentor + CE_mentee),
//      the KL of its predictions to the other's and the MSE of its 64-d embedding to the other's,
//   3. replies with the mentee only.
// The server averages the mentees (FedAvg). Each client's mentor is scored. The original's SVD
// compression of the updates is not implemented (the note: accuracy is the target).
#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "methods/fedkd/fedkd.pb.h"
#include "nn/losses/losses.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedkd {
namespace {

constexpr char kType[] = "fedkd.mentee";
constexpr char kMenteePrefix[] = "mentee.";

fl::MethodConfig MenteeConfig(const fl::MethodConfig& config, const FedKdParams& params) {
  fl::MethodConfig mentee = config;
  mentee.model_spec = params.mentee_model();
  mentee.shared_group = "";
  return mentee;
}

class FedKdClient final : public fl::ClientAlgorithm {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(FedKdParams params, fl::MethodParams<FedKdParams>(config));
    FGL_ASSIGN_OR_RETURN(auto mentor, fl::LocalModel::Create(data, config, config.seed));
    FGL_ASSIGN_OR_RETURN(auto mentee, fl::LocalModel::Create(data, MenteeConfig(config, params), config.seed));
    if (mentor->model().embedding_dim() != mentee->model().embedding_dim()) {
      return absl::InvalidArgumentError(absl::StrCat("fedkd: the mentor's embedding (", mentor->model().embedding_dim(),
                                                     ") and the mentee's (", mentee->model().embedding_dim(),
                                                     ") must have one width for the hidden-state loss"));
    }
    return std::unique_ptr<fl::ClientAlgorithm>(
        new FedKdClient(std::move(data), config, std::move(params), std::move(mentor), std::move(mentee)));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, mentee_->Parameters()));
    const torch::Tensor& y = data_->labels;
    const torch::Tensor& mask = data_->split.train;
    const bool adaptive = params_.adaptive();
    FGL_RETURN_IF_ERROR(fl::LocalModel::TrainMutually(
        *mentor_, *mentee_, config_.local_epochs, round.seed,
        [&](const nn::ModelOutput& mentor, const nn::ModelOutput& mentee) {
          const torch::Tensor ce_mentor = nn::MaskedCrossEntropy(mentor.logits, y, mask);
          const torch::Tensor ce_mentee = nn::MaskedCrossEntropy(mentee.logits, y, mask);
          const double scale = adaptive ? 1.0 / (ce_mentor.item<double>() + ce_mentee.item<double>()) : 1.0;
          auto distill = [&](const nn::ModelOutput& self, const nn::ModelOutput& other) {
            return scale * (nn::KlDivergence(self.logits, other.logits.detach(), 1.0, mask) +
                            nn::MeanSquaredError(self.embedding, other.embedding.detach(), mask));
          };
          return std::make_pair(ce_mentor + distill(mentor, mentee), ce_mentee + distill(mentee, mentor));
        }));
    fl::proto::Message reply = fl::ModelReply(mentee_->Parameters(), data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTrainLoss(mentor_->last_loss(), &reply);
    return reply;
  }

  // The mentor, whatever the server broadcast.
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message*) override { return mentor_->Predict(); }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message state = mentor_->SaveState();
    mentee_->AddState(kMenteePrefix, &state);
    return state;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    FGL_RETURN_IF_ERROR(mentor_->RestoreState(state));
    return mentee_->RestoreState(state, kMenteePrefix);
  }

 private:
  FedKdClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config, FedKdParams params,
              std::unique_ptr<fl::LocalModel> mentor, std::unique_ptr<fl::LocalModel> mentee)
      : data_(std::move(data)), config_(config), params_(std::move(params)), mentor_(std::move(mentor)),
        mentee_(std::move(mentee)) {}

  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  FedKdParams params_;
  std::unique_ptr<fl::LocalModel> mentor_, mentee_;
};

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedKdParams params, fl::MethodParams<FedKdParams>(config));
  return fl::MakeModelAverageServer(MenteeConfig(config, params), kType);
}

absl::Status Validate(const FedKdParams& p) {
  if (p.mentee_model().empty()) return absl::InvalidArgumentError("FedKdParams.mentee_model is empty");
  return absl::OkStatus();
}

}  // namespace

FGL_REGISTER_METHOD("fedkd", &FedKdClient::Make, MakeServer, {fl::TypedParams(&Validate)});

}  // namespace fgl::methods::fedkd
