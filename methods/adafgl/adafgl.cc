// AdaFGL (Li et al., "AdaFGL: A New Paradigm for Federated Node Classification with Topology
// Heterogeneity", ICDE 2024) as OpenFGL runs it (openfgl/flcore/adafgl). Two steps:
//   1. rounds 1..V: FedAvg of the clients' models, the federated knowledge extractor;
//   2. round V+1: each client loads the final global model, computes its soft labels, a homophily
//      reliability by label propagation, and features smoothed on its graph mixed with the
//      soft labels' similarity graph (personalisation.h); then, that round and every later one,
//      one Adam step of its homophilous and heterophilous modules. The server is idle then, but
//      for sending that same global model to a client that starts step 2 late (client sampling).
// Scored: each client's own model (step 1) or its modules' mixed prediction (step 2).
#include <cmath>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/optimizer_state.h"
#include "fl/registry.h"
#include "fl/round_schedule.h"
#include "fl/typed_state.h"
#include "methods/adafgl/adafgl.pb.h"
#include "methods/adafgl/personalisation.h"
#include "nn/adam.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::adafgl {
namespace {

constexpr char kType[] = "adafgl.weights";
constexpr char kIdle[] = "adafgl.idle";  // step 2: nothing travels
constexpr char kPrefix[] = "adafgl.";

class AdaFglClient final : public fl::ModelClient {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(AdaFglParams params, fl::MethodParams<AdaFglParams>(config));
    if (config.spec.rounds() > 0 && config.spec.rounds() <= params.vanilla_rounds()) {
      return absl::InvalidArgumentError(absl::StrCat("adafgl: ", config.spec.rounds(), " rounds never reach step 2 (after ",
                                                     params.vanilla_rounds(), " vanilla rounds)"));
    }
    FGL_ASSIGN_OR_RETURN(auto model, fl::LocalModel::Create(data, config, config.seed));
    return std::unique_ptr<fl::ClientAlgorithm>(
        new AdaFglClient(std::move(data), config, std::move(params), std::move(model)));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    if (round.round <= params_.vanilla_rounds()) {
      FGL_RETURN_IF_ERROR(fl::LoadTensors(global, model_->SharedParameters()));
      FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed));
      fl::proto::Message reply =
          fl::ModelReply(model_->SharedParameters(), data_->data.num_nodes(), data_->id, round, kType);
      fl::AddTrainLoss(model_->last_loss(), &reply);
      return reply;
    }
    if (!modules_) {
      // The extractor: the final step-1 global model, in round V + 1's broadcast or, for a client
      // not sampled then, in its own message the first round it is sampled after it.
      if (global.header().type() == kIdle) {
        return absl::FailedPreconditionError(absl::StrCat("adafgl: client ", data_->id, " starts step 2 in round ",
                                                          round.round, " but the server sent no step-1 model"));
      }
      FGL_RETURN_IF_ERROR(fl::LoadTensors(global, model_->SharedParameters()));
      FGL_RETURN_IF_ERROR(Personalise());
    }
    nn::DropoutSeedScope dropout_stream(round.seed);
    modules_->train();
    optimizer_->zero_grad();
    // Step 2 runs on the CPU (its inputs are built there); the labels and mask live on the run's device.
    const torch::Tensor loss = modules_->Loss(modules_->forward(inputs_), inputs_, data_->labels.to(torch::kCPU),
                                              data_->split.train.to(torch::kCPU));
    const double value = loss.item<double>();
    if (!std::isfinite(value)) return absl::InvalidArgumentError(absl::StrCat("client ", data_->id, ": AdaFGL loss ", value));
    loss.backward();
    optimizer_->step();
    fl::proto::Message reply;
    reply.mutable_header()->set_round(round.round);
    reply.mutable_header()->set_sender(data_->id);
    reply.mutable_header()->set_receiver(-1);
    reply.mutable_header()->set_type(kIdle);
    fl::AddTrainLoss(value, &reply);
    return reply;
  }

  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message*) override {
    if (!modules_) return model_->Predict();
    torch::NoGradGuard no_grad;
    modules_->eval();
    return PersonalisedModules::Predict(modules_->forward(inputs_), inputs_).to(data_->labels.device());
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message state = model_->SaveState();
    if (modules_) {
      const fl::NamedTensors params = ModuleParameters();
      fl::AddTensors(params, &state);
      fl::SaveAdamState(*optimizer_, params, absl::StrCat(kPrefix, "adam."), &state);
    }
    return state;
  }

  absl::Status RestoreState(const fl::proto::Message& state) override {
    FGL_RETURN_IF_ERROR(model_->RestoreState(state));
    modules_.reset();
    bool personalised = false;
    for (const auto& t : state.tensors()) personalised |= t.name().rfind(kPrefix, 0) == 0;
    if (!personalised) return absl::OkStatus();
    // The fixed inputs are a deterministic function of the saved extractor: recomputed, not stored.
    FGL_RETURN_IF_ERROR(Personalise());
    const fl::NamedTensors params = ModuleParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(state, params));
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(state));
    return fl::RestoreAdamState(state, tensors, params, absl::StrCat(kPrefix, "adam."),
                                absl::StrCat("client ", data_->id), optimizer_.get());
  }

 private:
  AdaFglClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config, AdaFglParams params,
               std::unique_ptr<fl::LocalModel> model)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)) {}

  fl::NamedTensors ModuleParameters() const {
    fl::NamedTensors out;
    for (const auto& item : modules_->named_parameters(true)) out.emplace_back(kPrefix + item.key(), item.value());
    return out;
  }

  // Step 2's set-up from the extractor (model_): soft labels, reliability, smoothed features, and
  // freshly initialised modules with their own Adam.
  absl::Status Personalise() {
    torch::NoGradGuard no_grad;
    const torch::Tensor adjacency = DenseAdjacency(data_->data.graph);
    inputs_.features = data_->data.features.to(torch::kFloat32);
    inputs_.soft_label = torch::softmax(model_->Infer().logits, 1).to(torch::kCPU);
    // A random half of the training nodes seeds label propagation; the other half scores it.
    const std::vector<int64_t> train = LabelPropagationOrder(data_->split.train, config_.seed, data_->id);
    const torch::Tensor unlabelled = data_->split.val.to(torch::kCPU).logical_or(data_->split.test.to(torch::kCPU));
    inputs_.reliability = PropagationReliability(adjacency, data_->labels.to(torch::kCPU), config_.num_classes,
                                                 torch::tensor(train, torch::kInt64), unlabelled, params_);
    inputs_.smoothed = SmoothedFeatures(adjacency, inputs_.features, inputs_.soft_label, params_);
    modules_ = std::make_shared<PersonalisedModules>(
        inputs_.features.size(1), inputs_.smoothed.size(1), config_.num_classes, params_,
        ModuleInitSeed(config_.seed, data_->id));
    optimizer_ = std::make_unique<nn::Adam>(
        modules_->parameters(), torch::optim::AdamOptions(params_.lr()).weight_decay(params_.weight_decay()));
    return absl::OkStatus();
  }

  AdaFglParams params_;
  FixedInputs inputs_;
  std::shared_ptr<PersonalisedModules> modules_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
};

// FedAvg through step 1 (and the broadcast that starts step 2); idle after it. The FedAvg part's
// global model stays the final step-1 model from round V + 1 on (only idle replies arrive), so it
// is what a client that starts step 2 late receives: in a run that samples clients, a client not
// sampled in round V + 1 gets that model in its own message the first round it is sampled after
// it, and every client that has started step 2 gets the idle message. A run without sampling
// broadcasts as before (every client starts in round V + 1), and keeps no state beyond FedAvg's.
class AdaFglServer final : public fl::ServerAlgorithm, public fl::PersonalisedServer {
 public:
  AdaFglServer(std::unique_ptr<fl::ModelAverageServer> average, int vanilla_rounds, int num_clients,
               bool samples_clients)
      : average_(std::move(average)),
        vanilla_rounds_(vanilla_rounds),
        num_clients_(num_clients),
        samples_clients_(samples_clients) {}

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    if (round.round <= vanilla_rounds_ + 1) return average_->Broadcast(round);
    return fl::ServerMessage({}, round, kIdle);
  }
  // Fixed for the run (set at construction): the driver asks once, at the start.
  fl::PersonalisedServer* personalised() override { return samples_clients_ ? this : nullptr; }
  absl::StatusOr<fl::proto::Message> BroadcastTo(int client, const fl::RoundInfo& round) override {
    if (round.round > vanilla_rounds_ + 1 && !started_.count(client)) return average_->Broadcast(round);
    return Broadcast(round);
  }
  absl::Status Accumulate(const fl::proto::Message& reply) override {
    const int sender = reply.header().sender();
    const int round = reply.header().round();
    // Replies are checked against the step their round is in: an idle reply marks a client as
    // started, and a model after step 1 would move the global model late clients start from.
    if (reply.header().type() == kIdle) {
      if (round <= vanilla_rounds_) {
        return absl::InvalidArgumentError(absl::StrCat("adafgl: idle reply from client ", sender, " in round ", round,
                                                       ", a vanilla round"));
      }
      if (!samples_clients_) return absl::OkStatus();
      if (sender < 0 || sender >= num_clients_) {
        return absl::InvalidArgumentError(absl::StrCat("adafgl: idle reply from client ", sender, " of ",
                                                       num_clients_));
      }
      started_.insert(sender);
      return absl::OkStatus();
    }
    if (round > vanilla_rounds_) {
      return absl::InvalidArgumentError(absl::StrCat("adafgl: client ", sender, " sent a model in round ",
                                                     round, ", after the ", vanilla_rounds_,
                                                     " vanilla rounds"));
    }
    return average_->Accumulate(reply);
  }
  absl::Status FinishRound(const fl::RoundInfo& round) override { return average_->FinishRound(round); }
  absl::StatusOr<fl::proto::Message> SaveState() const override {
    FGL_ASSIGN_OR_RETURN(fl::proto::Message m, average_->SaveState());
    if (samples_clients_) {
      AdaFglServerState state;
      for (int k : started_) state.add_personalised_clients(k);  // std::set: ascending
      fl::PackState(state, &m);
    }
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    std::set<int> started;
    if (samples_clients_) {
      FGL_ASSIGN_OR_RETURN(const AdaFglServerState saved, fl::UnpackState<AdaFglServerState>(state, "adafgl state"));
      for (int k : saved.personalised_clients()) {
        if (k < 0 || k >= num_clients_ || !started.insert(k).second) {
          return absl::InvalidArgumentError(absl::StrCat("adafgl state: personalised client ", k,
                                                         " is out of range [0, ", num_clients_, ") or listed twice"));
        }
      }
    }
    FGL_RETURN_IF_ERROR(average_->RestoreState(state));
    started_ = std::move(started);
    return absl::OkStatus();
  }
  fl::AggregateSource* aggregate_source() override { return average_->aggregate_source(); }

 private:
  std::unique_ptr<fl::ModelAverageServer> average_;
  int vanilla_rounds_;
  int num_clients_;
  bool samples_clients_;
  std::set<int> started_;  // clients that have started step 2 (kept only when samples_clients_)
};

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(AdaFglParams params, fl::MethodParams<AdaFglParams>(config));
  FGL_ASSIGN_OR_RETURN(auto average, fl::ModelAverageServer::Create(config, kType));
  // Only a sampled run must remember who has started step 2.
  const bool samples = fl::ClientsPerRound(config.spec) < config.spec.clients();
  return std::unique_ptr<fl::ServerAlgorithm>(
      new AdaFglServer(std::move(average), params.vanilla_rounds(), config.spec.clients(), samples));
}

}  // namespace

FGL_REGISTER_METHOD("adafgl", AdaFglClient::Make, MakeServer, {fl::TypedParams<AdaFglParams>()});

}  // namespace fgl::methods::adafgl
