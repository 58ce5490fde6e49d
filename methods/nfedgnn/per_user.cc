#include "methods/nfedgnn/per_user.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "fl/tensor_codec.h"
#include "graph/datasets.h"
#include "graph/random.h"
#include "graph/split.h"
#include "fl/node_level/params.pb.h"
#include "fl/node_level/server_side.h"
#include "fl/node_level/user_models.h"
#include "nn/graph_view.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::nfedgnn {

using ::fgl::fl::node_level::MakePrivateUserModels;
using ::fgl::fl::node_level::NfedgnnParams;
using ::fgl::fl::node_level::ParseSplitModel;
using ::fgl::fl::node_level::ServerSide;
using ::fgl::fl::node_level::SplitModelSpec;
using ::fgl::fl::node_level::UserFeatures;
using ::fgl::fl::node_level::UserModelOptions;
using ::fgl::fl::node_level::UserModels;
using ::fgl::fl::node_level::UserOptionsFor;

namespace {

constexpr char kLatent[] = "nfedgnn.latent";
constexpr char kGradient[] = "nfedgnn.gradient";
constexpr char kLogits[] = "nfedgnn.logits";

// SHARED init: the batched runner's one draw, so both deployments compute the same numbers.
// INDEPENDENT: the user's own stream (the batched runner draws all users from one stream).
UserModelOptions UserOptions(const fl::MethodConfig& config, const SplitModelSpec& model, const NfedgnnParams& params,
                             int user) {
  const uint64_t seed = params.user_init() == NfedgnnParams::SHARED
                            ? graph::Rng::Derive(config.run_seed, "nfedgnn/user_init")
                            : graph::Rng::Derive(config.run_seed, absl::StrCat("nfedgnn/user/", user));
  return UserOptionsFor(model, params, config.spec.lr(), config.spec.weight_decay(), seed);
}

class PerUserClient final : public fl::ClientAlgorithm {
 public:
  PerUserClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config, SplitModelSpec model,
                UserModelOptions options)
      : data_(std::move(data)), config_(config), model_(model),
        features_(UserFeatures::FromDense(data_->data.features)),
        users_(MakePrivateUserModels(features_, options)) {}

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server, const fl::RoundInfo& round) override {
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(from_server));
    if (auto it = tensors.find(kGradient); it != tensors.end()) {
      if (it->second.sizes() != torch::IntArrayRef({1, model_.latent_width()}) || !fl::AllFinite(it->second)) {
        return absl::InvalidArgumentError(absl::StrCat("user ", data_->id, ": gradient of shape ",
                                                       c10::str(it->second.sizes()), ", expected [1, ",
                                                       model_.latent_width(), "] and finite"));
      }
      users_->Step(values_, it->second.to(torch::kFloat));
    }
    // Split round `round`'s input dropout, the user's own stream.
    nn::DropoutSeedScope dropout_seed(graph::Rng::Derive(round.seed, absl::StrCat("nfedgnn/user/", data_->id)));
    values_ = nn::Dropout(features_.values, model_.input_dropout, /*training=*/true);
    fl::proto::Message reply;
    reply.mutable_header()->set_sender(data_->id);
    reply.mutable_header()->set_round(round.round);
    reply.mutable_header()->set_type(kLatent);
    *reply.add_tensors() = fl::EncodeTensor(kLatent, users_->Latents(values_));
    if (model_.input_dropout > 0) {  // the evaluation needs the latent without dropout too
      *reply.add_tensors() = fl::EncodeTensor("nfedgnn.eval_latent", users_->Latents(features_.values));
    }
    return reply;
  }

  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message* global) override {
    if (global == nullptr) return absl::FailedPreconditionError("nfedgnn: the server's logits are needed");
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(*global));
    auto it = tensors.find(kLogits);
    if (it == tensors.end() || it->second.dim() != 2 || it->second.size(0) <= data_->id) {
      return absl::InvalidArgumentError(absl::StrCat("user ", data_->id, ": no logits row in the server's message"));
    }
    return it->second.slice(0, data_->id, data_->id + 1);
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    return absl::UnimplementedError("nfedgnn: checkpoints are not implemented");
  }
  absl::Status RestoreState(const fl::proto::Message&) override {
    return absl::UnimplementedError("nfedgnn: checkpoints are not implemented");
  }

 private:
  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  SplitModelSpec model_;
  UserFeatures features_;
  std::unique_ptr<UserModels> users_;
  torch::Tensor values_ = torch::Tensor();  // the last forward's (dropped-out) feature values
};

class PerUserServer final : public fl::ServerAlgorithm, public fl::PersonalisedServer {
 public:
  static absl::StatusOr<std::unique_ptr<PerUserServer>> Make(const fl::MethodConfig& config) {
    auto s = std::unique_ptr<PerUserServer>(new PerUserServer(config));
    FGL_ASSIGN_OR_RETURN(s->params_, fl::MethodParams<NfedgnnParams>(config));
    FGL_ASSIGN_OR_RETURN(s->model_, ParseSplitModel(config.model_spec));
    // The server knows the topology and the training users' labels (§B.1).
    FGL_ASSIGN_OR_RETURN(graph::Dataset data, graph::LoadDataset(config.spec.dataset(), config.spec.data_dir(), config.spec.partition_seed()));
    FGL_ASSIGN_OR_RETURN(graph::NodeSplit split, graph::MakeSplit(config.spec.split(), data, config.spec.partition_seed()));
    s->n_ = data.num_nodes();
    FGL_ASSIGN_OR_RETURN(s->server_, ServerSide::Create(s->model_, data, split, config.spec.lr(), config.spec.weight_decay(),
                                                        s->params_, config.run_seed));
    s->latents_ = torch::zeros({s->n_, s->model_.latent_width()});
    s->eval_latents_ = torch::zeros_like(s->latents_);
    return s;
  }

  fl::PersonalisedServer* personalised() override { return this; }

  absl::StatusOr<fl::proto::Message> BroadcastTo(int client, const fl::RoundInfo& round) override {
    fl::proto::Message m;
    m.mutable_header()->set_receiver(client);
    m.mutable_header()->set_round(round.round);
    if (gradients_.defined()) *m.add_tensors() = fl::EncodeTensor(kGradient, gradients_.slice(0, client, client + 1));
    return m;
  }

  // The evaluation message: every user's logits of the model after the last scored split round.
  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    fl::proto::Message m;
    m.mutable_header()->set_round(round.round);
    if (logits_.defined()) *m.add_tensors() = fl::EncodeTensor(kLogits, logits_);
    return m;
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    const int user = reply.header().sender();
    if (user < 0 || user >= n_) return absl::InvalidArgumentError(absl::StrCat("nfedgnn: reply from user ", user));
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
    auto latent = tensors.find(kLatent);
    if (latent == tensors.end() || latent->second.sizes() != torch::IntArrayRef({1, model_.latent_width()}) ||
        !fl::AllFinite(latent->second)) {
      return absl::InvalidArgumentError(absl::StrCat("nfedgnn: user ", user, " sent no finite [1, ",
                                                     model_.latent_width(), "] latent"));
    }
    auto eval = tensors.find("nfedgnn.eval_latent");
    latents_[user] = latent->second[0];
    eval_latents_[user] = (eval != tensors.end() ? eval->second : latent->second)[0];
    answered_.insert(user);
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo& round) override {
    if (static_cast<int64_t>(answered_.size()) != n_) {
      return absl::FailedPreconditionError(absl::StrCat("nfedgnn: round ", round.round, ": ", answered_.size(),
                                                        " of ", n_, " users answered; every user takes part"));
    }
    answered_.clear();
    logits_ = server_->EvalLogits(eval_latents_);  // the model after split round r − 1
    if (round.round >= rounds_) {  // the last round only scores
      gradients_ = torch::Tensor();
      return absl::OkStatus();
    }
    nn::DropoutSeedScope dropout_seed(graph::Rng::Derive(run_seed_, absl::StrCat("nfedgnn/round", round.round)));
    server_->Step(latents_.clone(), &gradients_);
    return absl::OkStatus();
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    return absl::UnimplementedError("nfedgnn: checkpoints are not implemented");
  }
  absl::Status RestoreState(const fl::proto::Message&) override {
    return absl::UnimplementedError("nfedgnn: checkpoints are not implemented");
  }

 private:
  explicit PerUserServer(const fl::MethodConfig& config) : rounds_(config.spec.rounds()), run_seed_(config.run_seed) {}

  int rounds_;
  uint64_t run_seed_;
  NfedgnnParams params_;
  SplitModelSpec model_;
  int64_t n_ = 0;
  std::unique_ptr<ServerSide> server_;
  torch::Tensor latents_, eval_latents_, gradients_, logits_;
  std::set<int> answered_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakePerUserClient(std::shared_ptr<const fl::ClientData> data,
                                                                        const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(const NfedgnnParams params, fl::MethodParams<NfedgnnParams>(config));
  FGL_ASSIGN_OR_RETURN(const SplitModelSpec model, ParseSplitModel(config.model_spec));
  if (data->data.num_nodes() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("nfedgnn: a user holds one node, client ", data->id, " holds ",
                                                   data->data.num_nodes(), " (partitioner node_level)"));
  }
  const UserModelOptions options = UserOptions(config, model, params, data->id);
  return std::make_unique<PerUserClient>(std::move(data), config, model, options);
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakePerUserServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(auto s, PerUserServer::Make(config));
  return std::unique_ptr<fl::ServerAlgorithm>(std::move(s));
}

}  // namespace fgl::methods::nfedgnn
