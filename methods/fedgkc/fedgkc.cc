// FedGKC (Wang et al., "Towards Federated Graph Learning in Model-Heterogeneous Scenarios via
// Federated Graph Knowledge Collaboration", arXiv 2501.12624), Algorithm 1 with the engineering
// note's per-epoch procedure (seeds_fedgkc_fedtad.md §A.1.3). Each client keeps a private model of
// its own architecture and a copilot shared by all. Each round a client:
//   1. loads the server's copilot,
//   2. for each of E epochs (Self-Mutual Knowledge Distillation):
//        copilot step: α·CE + β·L_neigh(e_l → e_c) + (1 − α − β)·KL(p_l ‖ p_c)            (Eq. 2)
//        local step:   α·CE + β·L_neigh(e_c → e_l) + (1 − α − β)·KL(p_c ‖ p_l)            (Eq. 3)
//                      + MSE(e_weak, e_strong) + KL(p_weak ‖ p_strong)                     (Eq. 4)
//      each with the other model as a frozen eval-mode teacher,
//   3. replies with the copilot, its data volume N_k and knowledge level P_k (Eqs. 7–9).
// The server (Knowledge-Aware Model Aggregation) averages the copilots with weights
// (N_k/ΣN + P_k/ΣP)/2 (Eqs. 6, 10–12). Each client's private model is scored.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "fl/model_average_server.h"
#include "fl/mutual_client.h"
#include "fl/registry.h"
#include "graph/random.h"
#include "methods/fedgkc/fedgkc.pb.h"
#include "methods/fedgkc/knowledge_level.h"
#include "methods/fedgkc/mutual_loss.h"
#include "nn/augmented_view.h"
#include "nn/losses/losses.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedgkc {
namespace {

constexpr char kType[] = "fedgkc.copilot";
constexpr char kCopilotPrefix[] = "copilot.";

class FedGkcClient final : public fl::ClientAlgorithm {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(FedGkcParams params, fl::MethodParams<FedGkcParams>(config));
    const uint64_t local_seed = params.private_init() == FedGkcParams::PER_CLIENT
                                    ? graph::Rng::Derive(config.seed, absl::StrCat("fedgkc/private/", data->id))
                                    : config.seed;
    FGL_ASSIGN_OR_RETURN(auto local, fl::LocalModel::Create(data, config, local_seed));
    FGL_ASSIGN_OR_RETURN(auto copilot,
                         fl::LocalModel::Create(data, fl::SharedModelConfig(config, params.copilot_model()), config.seed));
    const int64_t local_width = local->model().embedding_dim(), copilot_width = copilot->model().embedding_dim();
    if (params.smkd() && local_width != copilot_width) {
      return absl::InvalidArgumentError(absl::StrCat("fedgkc: client ", data->id, "'s model (", config.model_spec,
                                                     ") embeds in ", local_width, " dimensions, the copilot (",
                                                     params.copilot_model(), ") in ", copilot_width,
                                                     "; L_neigh needs one width"));
    }
    return std::unique_ptr<fl::ClientAlgorithm>(
        new FedGkcClient(std::move(data), config, std::move(params), std::move(local), std::move(copilot)));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, copilot_->Parameters()));
    nn::DropoutSeedScope dropout_stream(round.seed);
    graph::Rng views(round.seed, "fedgkc/views");
    const int epochs = config_.spec.local_epochs();
    if (params_.order() == FedGkcParams::INTERLEAVED) {
      for (int e = 0; e < epochs; ++e) {
        FGL_RETURN_IF_ERROR(CopilotStep());
        FGL_RETURN_IF_ERROR(LocalStep(views));
      }
    } else {
      for (int e = 0; e < epochs; ++e) FGL_RETURN_IF_ERROR(CopilotStep());
      for (int e = 0; e < epochs; ++e) FGL_RETURN_IF_ERROR(LocalStep(views));
    }
    fl::proto::Message reply =
        fl::ModelReply(copilot_->Parameters(), data_->data.num_nodes(), data_->id, round, kType);
    auto& scalars = *reply.mutable_scalars();
    scalars["data_volume"] = params_.data_volume() == FedGkcParams::TRAIN_NODES
                                 ? data_->split.train.sum().item<double>()
                                 : static_cast<double>(data_->data.num_nodes());
    if (params_.kama()) {
      scalars["knowledge"] = KnowledgeOfCopilot();
      VLOG(1) << "fedgkc round " << round.round << " client " << data_->id << ": N_k " << scalars["data_volume"]
              << ", P_k " << scalars["knowledge"];
    }
    fl::AddTrainLoss(local_->last_loss(), &reply);
    return reply;
  }

  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message*) override { return local_->Predict(); }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message state = local_->SaveState();
    copilot_->AddState(kCopilotPrefix, &state);
    return state;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    FGL_RETURN_IF_ERROR(local_->RestoreState(state));
    return copilot_->RestoreState(state, kCopilotPrefix);
  }

 private:
  FedGkcClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config, FedGkcParams params,
               std::unique_ptr<fl::LocalModel> local, std::unique_ptr<fl::LocalModel> copilot)
      : data_(std::move(data)), config_(config), params_(std::move(params)), local_(std::move(local)),
        copilot_(std::move(copilot)) {}

  torch::Tensor MutualLoss(const nn::ModelOutput& student, const nn::ModelOutput& teacher) const {
    return fedgkc::MutualLoss(student, teacher, data_->labels, data_->split.train, *data_->view, params_);
  }

  absl::Status CopilotStep() {
    const nn::ModelOutput teacher = local_->Infer();
    return copilot_->Step([&](nn::GnnModel& copilot) {
      return MutualLoss(copilot.forward(*data_->features, *data_->view), teacher);
    });
  }

  absl::Status LocalStep(graph::Rng& views) {
    const nn::ModelOutput teacher = copilot_->Infer();
    const bool self_distill = params_.smkd() && params_.self_distillation();
    std::optional<nn::AugmentedView> weak, strong;
    if (self_distill) {
      FGL_ASSIGN_OR_RETURN(weak, Augment(params_.weak_edge_drop(), params_.weak_feature_mask(), views));
      FGL_ASSIGN_OR_RETURN(strong, Augment(params_.strong_edge_drop(), params_.strong_feature_mask(), views));
    }
    return local_->Step([&](nn::GnnModel& local) {
      torch::Tensor loss = MutualLoss(local.forward(*data_->features, *data_->view), teacher);
      if (!self_distill) return loss;
      nn::ModelOutput w;
      {
        torch::NoGradGuard no_grad;  // the weak view is the teacher (stop-gradient)
        w = local.forward(weak->features, weak->graph);
      }
      const nn::ModelOutput s = local.forward(strong->features, strong->graph);
      return loss + nn::MeanSquaredError(s.embedding, w.embedding) +
             nn::KlDivergence(s.logits, w.logits, params_.temperature());
    });
  }

  absl::StatusOr<nn::AugmentedView> Augment(double edge_drop, double feature_mask, graph::Rng& rng) const {
    return nn::Augment(data_->data.graph, *data_->features, data_->view->device(), edge_drop, feature_mask, rng);
  }

  // P_k (Eqs. 7–9) of the trained copilot in eval mode on the original graph, all nodes.
  double KnowledgeOfCopilot() {
    KnowledgeTerms terms;
    terms.strength = params_.knowledge_strength();
    terms.class_clarity = params_.class_clarity();
    terms.smoothing = params_.smoothing_clarity();
    terms.mean_margin = params_.class_clarity_form() == FedGkcParams::MEAN_MARGIN;
    terms.lambda = params_.smoothing_lambda();
    const torch::Tensor probs = torch::softmax(copilot_->Infer().logits, 1);
    return KnowledgeLevel(probs, *data_->view, terms, params_.min_knowledge());
  }

  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  FedGkcParams params_;
  std::unique_ptr<fl::LocalModel> local_, copilot_;
};

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedGkcParams params, fl::MethodParams<FedGkcParams>(config));
  std::vector<std::string> weights = {"data_volume"};      // Eq. 6
  if (params.kama()) weights.push_back("knowledge");        // Eqs. 10–11
  return fl::MakeModelAverageServer(fl::SharedModelConfig(config, params.copilot_model()), kType, weights);
}

// The ranges are declared on FedGkcParams' fields; beta is also bounded by alpha.
absl::Status Validate(const FedGkcParams& p) {
  auto fail = [](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("FedGkcParams.", what)); };
  if (p.copilot_model().empty()) return fail("copilot_model is empty");
  if (!(p.alpha() + p.beta() <= 1)) {
    return fail(absl::StrCat("beta must be in [0, 1 - alpha], not ", p.beta(), " (alpha ", p.alpha(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

// Version 2: private models initialised per client (version 1 drew them all from one seed).
FGL_REGISTER_METHOD("fedgkc", FedGkcClient::Make, MakeServer, {fl::TypedParams<FedGkcParams>(&Validate)}, 2);

}  // namespace fgl::methods::fedgkc
