// MOON (Li et al. 2021), as OpenFGL runs it: FedAvg whose local objective adds
//   mu * CE([cos(z, z_global), cos(z, z_previous)] / tau, 0)
// averaged over all local nodes, where z is the model's last hidden embedding (no projection
// head), z_global the received global model's embedding and z_previous this client's own model's
// embedding after its previous local training (both in eval mode, constants). Until a client has
// trained once there is no negative and the term is skipped. mu and tau: moon.proto.
#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "methods/moon/moon.pb.h"
#include "nn/losses/losses.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::moon {
namespace {

constexpr char kType[] = "moon.weights";
constexpr char kPrevious[] = "moon.previous_embedding";

class MoonClient final : public fl::ModelClient {
 public:
  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global,
                                           const fl::RoundInfo& round) override {
    const MoonParams& p = params_;
    const double mu = p.mu(), tau = p.tau();
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, params));
    const torch::Tensor global_embedding = Embedding();
    fl::LocalModel::Hooks hooks;
    if (previous_.defined()) {
      hooks.extra_loss = [&](const nn::ModelOutput& out) {
        const torch::Tensor z = nn::Dropout(out.embedding, p.embedding_dropout(), /*training=*/true);
        return mu * nn::ModelContrastive(z, global_embedding, previous_, tau);
      };
    }
    FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed, hooks));
    previous_ = Embedding();
    fl::proto::Message reply = fl::ModelReply(params, data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m = model_->SaveState();
    if (previous_.defined()) fl::AddTensors({{kPrevious, previous_}}, &m);
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    fl::proto::Message model_state = state;
    FGL_ASSIGN_OR_RETURN(auto previous, fl::TakeTensors(kPrevious, &model_state));
    previous_ = previous.count("") ? previous.at("").to(config_.device) : torch::Tensor();
    return model_->RestoreState(model_state);
  }

 private:
  friend class fl::ModelClient;  // MakeWithParams: the params unpacked once, at creation
  MoonClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
             std::unique_ptr<fl::LocalModel> model, MoonParams params)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)) {}

  // The current model's embedding of every local node, eval mode, no gradient.
  torch::Tensor Embedding() {
    torch::NoGradGuard no_grad;
    nn::GnnModel& m = model_->model();
    m.eval();
    torch::Tensor z = m.forward(*data_->features, *data_->view).embedding;
    return z;
  }
  const MoonParams params_;
  torch::Tensor previous_;
};

}  // namespace

FGL_REGISTER_METHOD("moon", fl::ModelClient::MakeWithParams<MoonClient, MoonParams>,
                    [](const fl::MethodConfig& config) { return fl::MakeModelAverageServer(config, kType); },
                    {fl::TypedParams<MoonParams>()});

}  // namespace fgl::methods::moon
