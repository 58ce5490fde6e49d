// FGSSL (Huang et al., "Federated Graph Semantic and Structural Learning", IJCAI 2023) as OpenFGL
// runs it (openfgl/flcore/fgssl). Each round a client:
//   1. loads the global weights into its model and into a frozen copy (the teacher),
//   2. for E epochs: CE on its training nodes + w · EdgeDifferenceKl(local on a strong view,
//      teacher in eval mode on a weak view), over the stored edges of its subgraph,
//   3. replies with its weights.
// The server is FedAvg (node counts). OpenFGL computes a node-level contrastive term and three
// further distillation terms but adds none of them to the loss (nor does the authors' node-level
// trainer); they are left out here (README.md).
#include <memory>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "graph/random.h"
#include "methods/fgssl/fgssl.pb.h"
#include "nn/augmented_view.h"
#include "nn/losses/losses.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fgssl {
namespace {

constexpr char kType[] = "fgssl.weights";

class FgsslClient final : public fl::ModelClient {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(FgsslParams params, fl::MethodParams<FgsslParams>(config));
    FGL_ASSIGN_OR_RETURN(auto model, fl::LocalModel::Create(data, config, config.seed));
    FGL_ASSIGN_OR_RETURN(auto teacher, fl::LocalModel::Create(data, config, config.seed));
    return std::unique_ptr<fl::ClientAlgorithm>(
        new FgsslClient(std::move(data), config, std::move(params), std::move(model), std::move(teacher)));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    const FgsslParams& p = params_;
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, model_->SharedParameters()));
    // The teacher: the global model as received, never trained.
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, teacher_->SharedParameters()));
    graph::Rng views(round.seed, "fgssl/views");
    absl::Status augmented = absl::OkStatus();
    fl::LocalModel::Hooks hooks;
    hooks.extra_loss = [&](const nn::ModelOutput&) -> torch::Tensor {
      auto weak = nn::Augment(data_->data.graph, *data_->features, data_->view->device(), p.weak_edge_drop(),
                              p.weak_feature_mask(), views);
      auto strong = nn::Augment(data_->data.graph, *data_->features, data_->view->device(), p.strong_edge_drop(),
                                p.strong_feature_mask(), views);
      if (!weak.ok() || !strong.ok()) {
        augmented = weak.ok() ? strong.status() : weak.status();
        return torch::zeros({});
      }
      nn::ModelOutput global_view;
      {
        torch::NoGradGuard no_grad;
        teacher_->model().eval();
        global_view = teacher_->model().forward(weak->features, weak->graph);
      }
      const nn::ModelOutput local_view = model_->model().forward(strong->features, strong->graph);
      // The strong view's logits are unused, so a mask of its own is OpenFGL's post-dropout hidden layer.
      const torch::Tensor student = nn::Dropout(local_view.embedding, p.embedding_dropout(), /*training=*/true);
      return p.edge_weight() * nn::EdgeDifferenceKl(student, global_view.embedding, *data_->view, p.edge_tau());
    };
    FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed, hooks));
    FGL_RETURN_IF_ERROR(augmented);
    fl::proto::Message reply =
        fl::ModelReply(model_->SharedParameters(), data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

 private:
  FgsslClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config, FgsslParams params,
              std::unique_ptr<fl::LocalModel> model, std::unique_ptr<fl::LocalModel> teacher)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)),
        teacher_(std::move(teacher)) {}

  FgsslParams params_;
  std::unique_ptr<fl::LocalModel> teacher_;  // reloaded from the broadcast every round: no state
};

}  // namespace

FGL_REGISTER_METHOD("fgssl", FgsslClient::Make,
                    [](const fl::MethodConfig& config) { return fl::MakeModelAverageServer(config, kType); },
                    {fl::TypedParams<FgsslParams>()}, 2);  // 2: the student's embedding after dropout

}  // namespace fgl::methods::fgssl
