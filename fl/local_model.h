// A client's own model and optimiser, and the local training loop that model-based methods
// share (FedAvg, FedProx, Local, ...). The optimiser persists across rounds, as in OpenFGL.
#ifndef FGL_FL_LOCAL_MODEL_H_
#define FGL_FL_LOCAL_MODEL_H_

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/tensor_codec.h"
#include "nn/models/gnn_model.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

// Ids of the nodes where `mask` (bool [N]) is true, ascending: a client's training pool.
std::vector<int64_t> MaskedNodes(const torch::Tensor& mask);

// The initialisation seed of a model a client keeps to itself (a private body, a personalised
// model): its own per client, as every client of the papers' code draws its own initialisation.
// Shared models keep config.seed: the server's first broadcast replaces them anyway.
uint64_t PrivateInitSeed(const MethodConfig& config, const ClientData& data);

class LocalModel {
 public:
  // Builds config.model_spec with parameters drawn from `init_seed`.
  static absl::StatusOr<std::unique_ptr<LocalModel>> Create(std::shared_ptr<const ClientData> data,
                                                            const MethodConfig& config,
                                                            uint64_t init_seed);

  nn::GnnModel& model() { return *model_; }
  // The model's parameters by name, optionally one group ("body" or "head").
  NamedTensors Parameters(const std::string& group = "") const;
  // The parameters the method exchanges: Parameters(config.spec.shared_group()).
  NamedTensors SharedParameters() const;

  // What a method adds to plain local training; every member is optional.
  struct Hooks {
    // Replaces the cross-entropy: the loss of the trained nodes' logits [n, C] against their
    // labels [n] (the full batch's training nodes, or a mini-batch's centres). FedEgo's authors'
    // −log(softmax + 1e-7).
    std::function<torch::Tensor(const torch::Tensor& logits, const torch::Tensor& labels)> task_loss;
    // A term added to the cross-entropy, given this epoch's forward pass (FedProx's proximal
    // term, MOON's contrastive term).
    std::function<torch::Tensor(const nn::ModelOutput&)> extra_loss;
    // Sees each step's cross-entropy before extra_loss (FedEgo's adaptive FedProx weight).
    std::function<void(double)> on_task_loss;
    // Runs after backward, before the optimiser step: gradient corrections (SCAFFOLD, FedDC).
    std::function<void()> after_backward;
  };

  // `epochs` full-batch steps of masked cross-entropy on the client's training nodes, plus the
  // hooks; a mini-batch model (nn::GnnModel::mini_batching, FedEgo's ego-trees) takes one step
  // per batch of its epoch's random training nodes instead, the hooks seeing the batch's output.
  // Dropout (and sampling) draws from `seed`. InvalidArgument if the loss becomes NaN/Inf (the
  // caller leaves this client out).
  absl::Status Train(int epochs, uint64_t seed, const Hooks& hooks = {});

  // One full-batch optimiser step on `loss(model)` with the model in train mode, for objectives
  // that are not cross-entropy plus extras (FedGKC's alternating copilot and local steps): `loss`
  // runs the forward passes it needs. Dropout draws from the caller's stream. InvalidArgument if
  // the loss is NaN/Inf (nothing is stepped then).
  absl::Status Step(const std::function<torch::Tensor(nn::GnnModel&)>& loss);
  // Embedding and logits on all local nodes, eval mode, no gradient: a teacher's output.
  nn::ModelOutput Infer();

  // The training loss of the last epoch Train() or Step() ran (NaN before any).
  double last_loss() const { return last_loss_; }
  // Optimiser steps taken so far (an epoch is one full-batch step, or one per mini-batch).
  int64_t steps() const { return steps_; }

  // Logits on all local nodes; eval mode unless dropout_at_eval (then dropout stays on). A
  // mini-batching model (one sampled tree per centre) scores only the val and test nodes, the
  // rows evaluation reads; its other rows are zero.
  torch::Tensor Predict();
  // The same on another graph's nodes (a shared global test graph).
  torch::Tensor PredictOn(const ClientData& graph);
  // The model's parameters and the optimiser's state (Adam's step and moments, SGD's momentum
  // buffers) as tensors.
  // `prefix` names the tensors, so that a client with two models keeps both in one message.
  proto::Message SaveState(const std::string& prefix = "") const;
  void AddState(const std::string& prefix, proto::Message* message) const;
  // Restores SaveState() output; names and shapes are checked.
  absl::Status RestoreState(const proto::Message& state, const std::string& prefix = "");
  // Deep mutual learning of two models on one client (FML, FedKD): `epochs` full-batch epochs in
  // which both forward on the same nodes, `losses(out_a, out_b)` gives each model its loss (each
  // must see the other's output detached), and both step. Dropout draws from `seed`.
  using MutualLosses = std::function<std::pair<torch::Tensor, torch::Tensor>(const nn::ModelOutput& a,
                                                                              const nn::ModelOutput& b)>;
  static absl::Status TrainMutually(LocalModel& a, LocalModel& b, int epochs, uint64_t seed,
                                    const MutualLosses& losses);

  // Loads `global` (the server's broadcast) first when it is given, then Predict(): how every
  // method scored on the global model evaluates.
  absl::StatusOr<torch::Tensor> Predict(const proto::Message* global);

 private:
  LocalModel(std::shared_ptr<const ClientData> data, const MethodConfig& config,
             std::shared_ptr<nn::GnnModel> model);
  // Adds the hooks' term to `loss` (the task's cross-entropy on `out`), steps, returns the loss;
  // InvalidArgument (last_loss() = the loss) when it is not finite.
  absl::StatusOr<double> OptimiserStep(const nn::ModelOutput& out, torch::Tensor loss, const Hooks& hooks, int epoch);
  absl::Status TrainMiniBatches(int epochs, uint64_t seed, const Hooks& hooks);
  std::shared_ptr<const ClientData> data_;
  MethodConfig config_;
  std::shared_ptr<nn::GnnModel> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;  // Adam or SGD (config.spec.optimizer())
  double last_loss_ = std::numeric_limits<double>::quiet_NaN();
  int64_t steps_ = 0;
};

// A client whose state is one LocalModel: scoring (the global broadcast loaded first when given),
// on its own graph and on another (GraphScoringClient), checkpoints and construction are shared;
// a method implements only Train().
class ModelClient : public ClientAlgorithm, public GraphScoringClient {
 public:
  // Builds the client with its model initialised from config.seed (every client starts from the
  // global initialisation).
  template <typename Client>
  static absl::StatusOr<std::unique_ptr<ClientAlgorithm>> Make(std::shared_ptr<const ClientData> data,
                                                               const MethodConfig& config) {
    auto model = LocalModel::Create(data, config, config.seed);
    if (!model.ok()) return model.status();
    return std::unique_ptr<ClientAlgorithm>(new Client(std::move(data), config, *std::move(model)));
  }
  // The same for a client that keeps its method's typed parameters: unpacked once, here, and
  // handed to `Client(data, config, model, params)` (methods/README.md), never in Train.
  template <typename Client, typename Params>
  static absl::StatusOr<std::unique_ptr<ClientAlgorithm>> MakeWithParams(std::shared_ptr<const ClientData> data,
                                                                         const MethodConfig& config) {
    absl::StatusOr<Params> params = MethodParams<Params>(config);
    if (!params.ok()) return params.status();
    auto model = LocalModel::Create(data, config, config.seed);
    if (!model.ok()) return model.status();
    return std::unique_ptr<ClientAlgorithm>(
        new Client(std::move(data), config, *std::move(model), *std::move(params)));
  }

  absl::StatusOr<torch::Tensor> Predict(const proto::Message* global) override {
    return model_->Predict(global);
  }
  absl::StatusOr<torch::Tensor> PredictGraph(const ClientData& graph, const proto::Message* global) override {
    if (global != nullptr) FGL_RETURN_IF_ERROR(LoadTensors(*global, model_->SharedParameters()));
    return model_->PredictOn(graph);
  }
  GraphScoringClient* graph_scoring() override { return this; }
  absl::StatusOr<proto::Message> SaveState() const override { return model_->SaveState(); }
  absl::Status RestoreState(const proto::Message& state) override { return model_->RestoreState(state); }

 protected:
  ModelClient(std::shared_ptr<const ClientData> data, const MethodConfig& config,
              std::unique_ptr<LocalModel> model)
      : data_(std::move(data)), config_(config), model_(std::move(model)) {}

  // The model-averaging client's step: E local epochs (with `hooks`), then the reply `type` with
  // the shared parameters, the node count and the train loss (fl::ModelReply).
  absl::StatusOr<proto::Message> TrainAndReply(const RoundInfo& round, const std::string& type,
                                               const LocalModel::Hooks& hooks = {});

  std::shared_ptr<const ClientData> data_;
  MethodConfig config_;
  std::unique_ptr<LocalModel> model_;
};

}  // namespace fgl::fl

#endif  // FGL_FL_LOCAL_MODEL_H_
