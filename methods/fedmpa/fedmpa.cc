// FedMpa and its family (Tang et al., "Federated Learning with Limited Node Labels"; note
// ../shared/papers/seeds_fedmpa_nodelevel.md Part A). With very few labels:
//   Stage 1, FedMLP (federated, rounds 1..R1): every client trains the MLP of the APPNP model on
//     its labelled nodes (E local epochs of Adam), the server averages with weights 1/M (Eq. 5).
//   Stage 2, FedMpa (local, round R1 + 1): each client starts from the final average theta*,
//     propagates the MLP's logits over its own subgraph with approximate personalised PageRank
//     (K steps, teleport alpha, Eq. 6) and fine-tunes the MLP through the propagation, with early
//     stopping on its validation nodes. Nothing is sent.
//   FedMpae adds the graph-autoencoder loss gamma * MSE(A_i, sigmoid(Z Z^T)) (Eqs. 9-10).
//   LocMpa is stage 2 alone from a random initialisation (no communication at all).
// "fedmlp" is stage 1 alone, scored on the global MLP.
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "graph/random.h"
#include "methods/fedmpa/fedmpa.pb.h"
#include "nn/losses/losses.h"
#include "nn/models/gnn_model.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedmpa {
namespace {

constexpr char kWeights[] = "fedmpa.mlp";  // stage 1 messages
constexpr char kDone[] = "fedmpa.local";   // a client's reply in a round it sends nothing

enum class LocalStage { kNone, kPropagate, kPropagateAndReconstruct };

struct Variant {
  const char* name;
  bool federated;    // stage 1 runs (false: LocMpa)
  LocalStage local;  // what stage 2 does (kNone: FedMLP)
};

// The run's rounds must fit the stages, or a stage would silently not run.
absl::Status CheckRounds(const Variant& v, const FedMpaParams& p, const fl::MethodConfig& config) {
  // Unknown (unit tests build clients directly), or no stage to miss: FedMLP federates every
  // round, LocMpa trains in round 1 and idles after. Rounds after the local stage idle too.
  if (config.spec.rounds() <= 0 || !v.federated || v.local == LocalStage::kNone) return absl::OkStatus();
  const int want = p.federated_rounds() + 1;
  if (config.spec.rounds() < want) {
    return absl::InvalidArgumentError(absl::StrCat(
        v.name, ": rounds = ", config.spec.rounds(), " but the method needs ", want, " (",
        "fedmpa.federated_rounds = ", p.federated_rounds(), " FedMLP rounds, then the local stage)"));
  }
  return absl::OkStatus();
}

// The MLP of an "appnp:..." spec (the same parameters, no propagation), or an "mlp:..." spec.
// From the normalised spec, so that every option (input_dropout's default differs) is explicit.
absl::StatusOr<std::string> MlpSpec(const std::string& given, const Variant& v) {
  absl::StatusOr<std::shared_ptr<nn::GnnModel>> model = nn::MakeModel(given, 1, 2);
  if (!model.ok()) return absl::Status(model.status().code(), absl::StrCat(v.name, ": model: ", model.status().message()));
  const std::string spec = (*model)->spec();
  std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  if (parts[0] == "mlp" && v.local == LocalStage::kNone) return spec;
  if (parts[0] != "appnp") {
    return absl::InvalidArgumentError(absl::StrCat(v.name, ": model '", given, "' must be ",
                                                   v.local == LocalStage::kNone ? "mlp or appnp" : "appnp"));
  }
  std::vector<std::string> kept;
  if (parts.size() == 2) {
    for (absl::string_view kv : absl::StrSplit(parts[1], ',', absl::SkipEmpty())) {
      const absl::string_view key = kv.substr(0, kv.find('='));
      if (key != "k" && key != "alpha" && key != "prop_dropout") kept.emplace_back(kv);
    }
  }
  return absl::StrCat("mlp:", absl::StrJoin(kept, ","));
}

// Tensors of a LocalModel state under `prefix`, and back.
void AddPrefixed(const std::string& prefix, const fl::proto::Message& state, fl::proto::Message* out) {
  for (fl::proto::Tensor t : state.tensors()) {
    t.set_name(prefix + t.name());
    *out->add_tensors() = std::move(t);
  }
  for (const auto& [name, value] : state.scalars()) (*out->mutable_scalars())[prefix + name] = value;
}
fl::proto::Message Unprefixed(const std::string& prefix, const fl::proto::Message& state) {
  fl::proto::Message m;
  for (const fl::proto::Tensor& t : state.tensors()) {
    if (absl::StartsWith(t.name(), prefix)) {
      fl::proto::Tensor& c = *m.add_tensors() = t;
      c.set_name(t.name().substr(prefix.size()));
    }
  }
  for (const auto& [name, value] : state.scalars()) {
    if (absl::StartsWith(name, prefix)) (*m.mutable_scalars())[name.substr(prefix.size())] = value;
  }
  return m;
}

class MpaClient final : public fl::ClientAlgorithm, public fl::GraphScoringClient {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(const Variant& v,
                                                                    std::shared_ptr<const fl::ClientData> data,
                                                                    const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(const FedMpaParams p, fl::MethodParams<FedMpaParams>(config));
    FGL_RETURN_IF_ERROR(fl::CheckParamRanges(p));
    FGL_RETURN_IF_ERROR(CheckRounds(v, p, config));
    FGL_ASSIGN_OR_RETURN(const std::string mlp_spec, MlpSpec(config.model_spec, v));
    auto client = std::unique_ptr<MpaClient>(new MpaClient(v, p, data, config));
    if (v.federated) {
      fl::MethodConfig mlp_config = config;
      mlp_config.model_spec = mlp_spec;
      FGL_ASSIGN_OR_RETURN(client->mlp_, fl::LocalModel::Create(data, mlp_config, config.seed));
    }
    // Built here, not in the local stage: model construction seeds the global generator, which
    // clients training on parallel workers must not race for.
    if (v.local != LocalStage::kNone) {
      FGL_ASSIGN_OR_RETURN(client->appnp_, fl::LocalModel::Create(data, config, client->InitSeed()));
    }
    return std::unique_ptr<fl::ClientAlgorithm>(std::move(client));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server, const fl::RoundInfo& round) override {
    const bool stage1 = v_.federated && (v_.local == LocalStage::kNone || round.round <= p_.federated_rounds());
    if (stage1) {
      FGL_RETURN_IF_ERROR(fl::LoadTensors(from_server, mlp_->SharedParameters()));
      FGL_RETURN_IF_ERROR(mlp_->Train(config_.spec.local_epochs(), round.seed));
      fl::proto::Message reply = fl::ModelReply(mlp_->SharedParameters(),
                                                p_.uniform_average() ? 1 : data_->data.num_nodes(), data_->id,
                                                round, kWeights);
      fl::AddTrainLoss(mlp_->last_loss(), &reply);
      return reply;
    }
    fl::proto::Message done;
    done.mutable_header()->set_type(kDone);
    done.mutable_header()->set_sender(data_->id);
    done.mutable_header()->set_round(round.round);
    if (v_.local != LocalStage::kNone && !local_done_) {  // rounds after it idle
      FGL_RETURN_IF_ERROR(RunLocalStage(v_.federated ? &from_server : nullptr, round));
      fl::AddTrainLoss(appnp_->last_loss(), &done);
    }
    return done;
  }

  // Stage 2 done: the client's own APPNP model; before: the MLP (the global one when given).
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message* global) override {
    if (local_done_) return appnp_->Predict();
    if (mlp_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(v_.name, ": no model before the local stage"));
    return mlp_->Predict(global);
  }
  // The same model on another graph (the whole-graph test of FedMpa's A.5.3).
  absl::StatusOr<torch::Tensor> PredictGraph(const fl::ClientData& graph, const fl::proto::Message* global) override {
    if (local_done_) return appnp_->PredictOn(graph);
    if (mlp_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(v_.name, ": no model before the local stage"));
    if (global != nullptr) FGL_RETURN_IF_ERROR(fl::LoadTensors(*global, mlp_->SharedParameters()));
    return mlp_->PredictOn(graph);
  }
  fl::GraphScoringClient* graph_scoring() override { return this; }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m;
    m.mutable_header()->set_type("fedmpa.state");
    if (mlp_ != nullptr) AddPrefixed("mlp.", mlp_->SaveState(), &m);
    if (local_done_) AddPrefixed("appnp.", appnp_->SaveState(), &m);
    (*m.mutable_scalars())["fedmpa.local_done"] = local_done_;
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    if (mlp_ != nullptr) FGL_RETURN_IF_ERROR(mlp_->RestoreState(Unprefixed("mlp.", state)));
    auto done = state.scalars().find("fedmpa.local_done");
    local_done_ = done != state.scalars().end() && done->second != 0;
    if (local_done_) FGL_RETURN_IF_ERROR(appnp_->RestoreState(Unprefixed("appnp.", state)));
    return absl::OkStatus();
  }

 private:
  MpaClient(const Variant& v, const FedMpaParams& p, std::shared_ptr<const fl::ClientData> data,
            const fl::MethodConfig& config)
      : v_(v), p_(p), data_(std::move(data)), config_(config) {}

  // LocMpa: each client its own random initialisation [S: "training the APPNP model using local
  // features and structure"]; the federated variants overwrite it with theta*.
  uint64_t InitSeed() const {
    return v_.federated ? config_.seed : graph::Rng::Derive(config_.seed, absl::StrCat("locmpa/client/", data_->id));
  }

  // Stage 2: APPNP fine-tuning from theta* (`global`; LocMpa: from scratch) with early stopping.
  absl::Status RunLocalStage(const fl::proto::Message* global, const fl::RoundInfo& round) {
    // theta* into the MLP of the APPNP model (the parameters have the same names); with a
    // shared_group only that group travelled, the rest is the client's own stage-1 MLP.
    if (global != nullptr) {
      {
        torch::NoGradGuard no_grad;
        const fl::NamedTensors own = mlp_->Parameters();
        for (auto& [name, t] : appnp_->Parameters()) {
          for (const auto& [own_name, v] : own) {
            if (own_name == name) t.copy_(v);
          }
        }
      }
      FGL_RETURN_IF_ERROR(fl::LoadTensors(*global, appnp_->SharedParameters()));
    }
    fl::LocalModel::Hooks hooks;
    const double beta = p_.ce_weight(), gamma = p_.reconstruction_weight();
    const bool reconstruct = v_.local == LocalStage::kPropagateAndReconstruct && gamma > 0;
    if (beta != 1 || reconstruct) {
      // The loop adds CE once; (beta - 1) CE + gamma L_rec makes Eq. 10.
      hooks.extra_loss = [&](const nn::ModelOutput& out) {
        torch::Tensor extra = torch::zeros({}, out.logits.options());
        if (beta != 1) extra = extra + (beta - 1) * nn::MaskedCrossEntropy(out.logits, data_->labels, data_->split.train);
        if (reconstruct) {
          const torch::Tensor z = p_.decoder_input() == FedMpaParams::PROPAGATED_SOFTMAX ? torch::softmax(out.logits, 1)
                                                                                         : out.logits;
          extra = extra + gamma * nn::InnerProductReconstructionMse(z, *data_->view);
        }
        return extra;
      };
    }
    // Without validation nodes there is nothing to stop on: all max_epochs, the last kept.
    const int64_t n_val = data_->split.val.sum().item<int64_t>();
    const int patience = n_val == 0 ? p_.max_epochs() : p_.patience();
    double best = -1;
    fl::proto::Message best_state;
    for (int e = 0, since = 0; e < p_.max_epochs() && since < patience; ++e) {
      FGL_RETURN_IF_ERROR(appnp_->Train(1, graph::Rng::Derive(round.seed, absl::StrCat("fedmpa/epoch/", e)), hooks));
      const torch::Tensor correct = appnp_->Predict().argmax(1) == data_->labels;
      const double val = n_val == 0 ? e : correct.logical_and(data_->split.val).sum().item<double>() / n_val;
      if (val > best) {
        best = val;
        best_state = appnp_->SaveState();
        since = 0;
      } else {
        ++since;
      }
    }
    local_done_ = true;
    return appnp_->RestoreState(best_state);  // the best epoch's model [P: restore_best]
  }

  const Variant v_;
  const FedMpaParams p_;
  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  std::unique_ptr<fl::LocalModel> mlp_;    // stage 1
  std::unique_ptr<fl::LocalModel> appnp_;  // stage 2 (a fresh Adam: the note is silent; stellargraph compiles anew)
  bool local_done_ = false;
};

// Stage 1's server: FedAvg of the MLP (weights as the clients state them: 1 each for Eq. 5's
// 1/M). Replies of the local stage carry nothing and are not aggregated. LocMpa's server sends
// nothing at all.
class MpaServer final : public fl::ServerAlgorithm {
 public:
  MpaServer(std::unique_ptr<fl::ServerAlgorithm> average) : average_(std::move(average)) {}

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    if (average_ != nullptr) return average_->Broadcast(round);
    fl::proto::Message m;
    m.mutable_header()->set_type(kDone);
    m.mutable_header()->set_round(round.round);
    return m;
  }
  absl::Status Accumulate(const fl::proto::Message& reply) override {
    if (reply.header().type() == kDone) return absl::OkStatus();
    if (average_ == nullptr) return absl::InvalidArgumentError("locmpa: the server takes no models");
    return average_->Accumulate(reply);
  }
  absl::Status FinishRound(const fl::RoundInfo& round) override {
    return average_ != nullptr ? average_->FinishRound(round) : absl::OkStatus();
  }
  absl::StatusOr<fl::proto::Message> SaveState() const override {
    return average_ != nullptr ? average_->SaveState() : absl::StatusOr<fl::proto::Message>(fl::proto::Message());
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    return average_ != nullptr ? average_->RestoreState(state) : absl::OkStatus();
  }
  // FedMPA's FedAvg exposes its model; LocMpa has none.
  fl::AggregateSource* aggregate_source() override {
    return average_ != nullptr ? average_->aggregate_source() : nullptr;
  }

 private:
  std::unique_ptr<fl::ServerAlgorithm> average_;
};

fl::MethodFactories Factories(const Variant v) {
  fl::MethodFactories f;
  f.client = [v](std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config) {
    return MpaClient::Make(v, std::move(data), config);
  };
  f.server = [v](const fl::MethodConfig& config) -> absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> {
    FGL_ASSIGN_OR_RETURN(const FedMpaParams p, fl::MethodParams<FedMpaParams>(config));
    FGL_RETURN_IF_ERROR(fl::CheckParamRanges(p));
    FGL_RETURN_IF_ERROR(CheckRounds(v, p, config));
    std::unique_ptr<fl::ServerAlgorithm> average;
    if (v.federated) {
      FGL_ASSIGN_OR_RETURN(const std::string mlp_spec, MlpSpec(config.model_spec, v));
      fl::MethodConfig mlp_config = config;
      mlp_config.model_spec = mlp_spec;
      FGL_ASSIGN_OR_RETURN(average, fl::MakeModelAverageServer(mlp_config, kWeights));
    }
    return std::unique_ptr<fl::ServerAlgorithm>(new MpaServer(std::move(average)));
  };
  f.params = {fl::TypedParams<FedMpaParams>()};
  return f;
}

}  // namespace

const fl::MethodFactories kFedMlp = Factories({"fedmlp", true, LocalStage::kNone});
const fl::MethodFactories kFedMpa = Factories({"fedmpa", true, LocalStage::kPropagate});
const fl::MethodFactories kFedMpae = Factories({"fedmpae", true, LocalStage::kPropagateAndReconstruct});
const fl::MethodFactories kLocMpa = Factories({"locmpa", false, LocalStage::kPropagate});

// Version 2: stage 1's MLP takes every option of the APPNP spec explicitly (input_dropout).
FGL_REGISTER_METHOD("fedmlp", kFedMlp.client, kFedMlp.server, kFedMlp.params, 2);
FGL_REGISTER_METHOD("fedmpa", kFedMpa.client, kFedMpa.server, kFedMpa.params, 2);
FGL_REGISTER_METHOD("fedmpae", kFedMpae.client, kFedMpae.server, kFedMpae.params, 3);
FGL_REGISTER_METHOD("locmpa", kLocMpa.client, kLocMpa.server, kLocMpa.params);

}  // namespace fgl::methods::fedmpa
