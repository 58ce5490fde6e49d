// The FedSage family (Zhang et al., NeurIPS 2021) with OpenFGL's NeighGen sizes, as three
// registered methods that share one client:
//   fedsage_plus: rounds 1..gen_rounds train NeighGen (neighgen.h) jointly with the GraphSAGE
//     classifier on the client's impaired graph (half of its non-train, non-test nodes hidden):
//     loss = num_weight * SmoothL1(dGen, true missing count)
//          + feat_weight * MissingFeatureLoss(fGen, hidden neighbours' features)
//          + cls_weight * CE(classifier on the impaired graph mended with fGen's output).
//     The cross-client term: the server averages the clients' NeighGen parameters every
//     generator round (node-count weights, or `weighting`), so each client's generator descends the
//     feature-matching losses of all clients, each computed where its data lives. Only NeighGen
//     parameters cross the wire, never node features. After the generator rounds each client
//     mends its local graph once (generated neighbours joined both ways) and FedAvg of the
//     classifier continues on the mended graphs.
//   fedsage: FedAvg of the GraphSAGE classifier on the local subgraphs (no NeighGen, hence no
//     cross-client term); neighgen=1 adds a NeighGen trained locally (no exchange).
//   locsage: each client's GraphSAGE alone; neighgen=1 adds a local NeighGen (LocSage+).
// The classifier is FedAvg'd in every round of the federated variants, generator rounds included
// (average_classifier_in_gen_rounds: false keeps each client's own through them, as OpenFGL).
// Where the official code and OpenFGL differ from this, fedsage_plus.proto has an option each.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/aggregate/weighted_mean.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/optimizer_state.h"
#include "fl/registry.h"
#include "fl/round_schedule.h"
#include "methods/fedsage_plus/fedsage_plus.pb.h"
#include "graph/random.h"
#include "methods/fedsage_plus/neighgen.h"
#include "nn/adam.h"
#include "nn/losses/losses.h"
#include "nn/memory.h"
#include "nn/ops/dropout.h"
#include "nn/parameter_residency.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedsage_plus {
namespace {

constexpr char kGenPrefix[] = "neighgen.";
constexpr char kGenAdam[] = "gen_adam.";
// Moments at least this large wait on disk between generator rounds (fGen's output layer: 279 MB
// each on Coauthor-CS); the small ones stay.
constexpr int64_t kSpillMinBytes = int64_t{16} << 20;

// Whether the idle clients' large Adam moments are worth moving to disk between generator rounds:
// only when all clients' together would take over an eighth of the machine's memory (Physics-5:
// 3.45 GB of 24; Coauthor-CS-20: 11.2 GB), since the writes cost system time (about 45 s per
// generator round on CS-10). Where they go changes no number.
bool SpillPays(const NeighGen& gen, int num_clients) {
  int64_t idle = 0;
  for (const auto& item : gen->named_parameters(/*recurse=*/true)) {
    const int64_t bytes = item.value().numel() * static_cast<int64_t>(item.value().element_size());
    if (bytes >= kSpillMinBytes) idle += 2 * bytes;  // exp_avg and exp_avg_sq
  }
  const int64_t memory = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  return memory > 0 && idle * num_clients > memory / 8;
}

// Where spilled optimiser state and parked NeighGens go: $TMPDIR, else /tmp (an unnamed file, gone
// with the process). On a tmpfs they would still take memory, only not the process's own.
std::string SpillDirectory() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}
constexpr char kMended[] = "mended";
constexpr char kGenTrained[] = "neighgen_trained";  // absent in checkpoints before it existed: 0
constexpr char kReleased[] = "neighgen_released";

// One registered member of the family and its defaults.
struct Variant {
  const char* name;
  const char* type;  // message type
  bool federated;    // the classifier is FedAvg'd
  bool neighgen;     // default of FedSagePlusParams.neighgen
  bool cross_client; // default of FedSagePlusParams.cross_client
};
constexpr Variant kFedSagePlus{"fedsage_plus", "fedsage_plus.weights", true, true, true};
constexpr Variant kFedSage{"fedsage", "fedsage.weights", true, false, false};
constexpr Variant kLocSage{"locsage", "locsage.none", false, false, false};

// FedSagePlusParams with the variant's defaults applied, checked once.
struct Settings {  // every value set by ReadSettings (fedsage_plus.proto states the defaults)
  bool neighgen = false, cross_client = false;
  double hidden_portion = 0;
  int64_t latent = 0, max_pred = 0, gen_hidden = 0;
  int gen_rounds = 0;
  double gen_dropout = 0, num_weight = 0, feat_weight = 0, cls_weight = 0;
  bool losses_on_train = false, truncate_counts = false, average_classifier_in_gen_rounds = true;
  fl::proto::ClientWeighting weighting = fl::proto::NODE_COUNT;
  bool mend_with_average = false, mend_dropout = false, gen_loss_per_client = false;
  bool generated_unread = false;  // generated_edges: INTO_GENERATED
  bool one_optimizer = false;
};

absl::StatusOr<Settings> ReadSettings(const Variant& v, const FedSagePlusParams& p) {
  auto bad = [](const char* field, const auto& value, const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("fedsage_plus.", field, " = ", value, ": ", why));
  };
  Settings s;
  s.neighgen = p.has_neighgen() ? p.neighgen() : v.neighgen;
  s.cross_client = s.neighgen && (p.has_cross_client() ? p.cross_client() : v.cross_client);
  s.hidden_portion = p.hidden_portion();
  s.latent = p.latent();
  s.max_pred = p.max_pred();
  s.gen_hidden = p.gen_hidden();
  s.gen_rounds = s.neighgen ? p.gen_rounds() : 0;
  s.gen_dropout = p.gen_dropout();
  s.num_weight = p.num_weight();
  s.feat_weight = p.feat_weight();
  s.cls_weight = p.cls_weight();
  s.losses_on_train = p.gen_loss_nodes() == FedSagePlusParams::TRAIN;
  s.truncate_counts = p.truncate_counts();
  s.average_classifier_in_gen_rounds = p.average_classifier_in_gen_rounds();
  s.weighting = p.weighting();
  s.mend_with_average = p.mend_with_average();
  s.mend_dropout = p.mend_dropout();
  s.gen_loss_per_client = p.gen_loss_per_client();
  s.generated_unread = p.generated_edges() == FedSagePlusParams::INTO_GENERATED;
  s.one_optimizer = p.one_optimizer();
  if (!v.federated && s.cross_client) return bad("cross_client", "true", "needs a federated variant (not locsage)");
  if (!(s.hidden_portion >= 0 && s.hidden_portion < 1)) return bad("hidden_portion", s.hidden_portion, "must be in [0, 1)");
  if (s.latent < 1) return bad("latent", s.latent, "must be >= 1");
  if (s.max_pred < 1) return bad("max_pred", s.max_pred, "must be >= 1");
  if (s.gen_hidden < 1) return bad("gen_hidden", s.gen_hidden, "must be >= 1");
  if (p.gen_rounds() < 0) return bad("gen_rounds", p.gen_rounds(), "must be >= 0");
  if (!(s.gen_dropout >= 0 && s.gen_dropout < 1)) return bad("gen_dropout", s.gen_dropout, "must be in [0, 1)");
  if (!(s.num_weight >= 0)) return bad("num_weight", s.num_weight, "must be >= 0");
  if (!(s.feat_weight >= 0)) return bad("feat_weight", s.feat_weight, "must be >= 0");
  if (!(s.cls_weight >= 0)) return bad("cls_weight", s.cls_weight, "must be >= 0");
  if (!v.federated && s.weighting != fl::proto::NODE_COUNT) {
    return bad("weighting", fl::proto::ClientWeighting_Name(s.weighting), "locsage averages nothing");
  }
  if (!s.average_classifier_in_gen_rounds && !(v.federated && s.neighgen)) {
    return bad("average_classifier_in_gen_rounds", "false", "needs generator rounds of a federated variant");
  }
  if (s.generated_unread && !s.neighgen) return bad("generated_edges", "INTO_GENERATED", "needs neighgen");
  if (s.one_optimizer && !s.neighgen) return bad("one_optimizer", "true", "needs neighgen (no joint optimiser otherwise)");
  if (s.mend_with_average && !s.cross_client) {
    return bad("mend_with_average", "true", "needs cross_client (only then is NeighGen averaged)");
  }
  return s;
}

absl::StatusOr<Settings> ReadSettings(const Variant& v, const fl::MethodConfig& c) {
  FGL_ASSIGN_OR_RETURN(const FedSagePlusParams p, fl::MethodParams<FedSagePlusParams>(c));
  FGL_ASSIGN_OR_RETURN(Settings s, ReadSettings(v, p));
  if (s.one_optimizer && c.spec.optimizer() != fl::proto::FederationSpec::ADAM) {
    return absl::InvalidArgumentError("fedsage_plus.one_optimizer = true: the classifier's optimiser must be Adam, as the joint one");
  }
  // NeighGen's mean goes out in round gen_rounds + 1 only: a client not sampled then could never mend.
  if (s.mend_with_average && fl::ClientsPerRound(c.spec) < c.spec.clients()) {
    return absl::InvalidArgumentError(absl::StrCat("fedsage_plus.mend_with_average = true: needs every client in every round (",
                                                   fl::ClientsPerRound(c.spec), " of ", c.spec.clients(), " are sampled)"));
  }
  return s;
}

template <const Variant& V>
absl::Status Validate(const FedSagePlusParams& p) {
  return ReadSettings(V, p).status();
}

// NeighGen built from a seed every party derives alike: the server's copy equals the clients'.
NeighGen MakeNeighGen(const Settings& s, const fl::MethodConfig& config) {
  torch::manual_seed(graph::Rng::Derive(config.seed, "fedsage_plus/neighgen"));
  NeighGen gen(NeighGenOptions(config.num_features)
                   .hidden(s.gen_hidden)
                   .latent(s.latent)
                   .max_pred(s.max_pred)
                   .dropout(s.gen_dropout)
                   .truncate_counts(s.truncate_counts));
  gen->to(config.device);
  return gen;
}

fl::NamedTensors Named(const torch::nn::Module& module) {
  fl::NamedTensors out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) out.emplace_back(item.key(), item.value());
  return out;
}

// float [rows, cols] of N(0, 1) draws from `seed`: the noise fGen adds, independent of threads.
torch::Tensor Noise(int64_t rows, int64_t cols, uint64_t seed, torch::Device device) {
  graph::Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return torch::from_blob(v.data(), {rows, cols}, torch::kFloat).clone().to(device);
}

class FedSageClient final : public fl::ClientAlgorithm, public fl::GraphScoringClient {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Create(const Variant& v,
                                                                     std::shared_ptr<const fl::ClientData> data,
                                                                     const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(Settings s, ReadSettings(v, config));
    // The classifier's graph starts as the local graph; mending replaces it in place.
    auto graph = std::make_shared<fl::ClientData>(*data);
    FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::LocalModel> model, fl::LocalModel::Create(graph, config, config.seed));
    std::unique_ptr<FedSageClient> c(new FedSageClient(v, s, std::move(data), std::move(graph), config, std::move(model)));
    if (s.neighgen) {
      c->gen_ = MakeNeighGen(s, config);
      c->release_generator_ = s.cross_client && fl::ClientsPerRound(config.spec) == config.spec.clients();
      std::vector<torch::Tensor> params;
      for (const auto& [name, p] : Named(*c->gen_)) params.push_back(p);
      c->gen_memory_ = std::make_unique<nn::ParameterResidency>(
          std::move(params), nn::ParameterResidencyOptions(SpillDirectory())
                                 .spill_moments(c->release_generator_ && SpillPays(c->gen_, config.spec.clients()))
                                 .spill_min_bytes(kSpillMinBytes));
      FGL_RETURN_IF_ERROR(c->PrepareGeneratorTraining());
      if (c->release_generator_ && s.gen_rounds > 0) c->ReleaseGenerator();  // round 1's broadcast sets it
    }
    return std::unique_ptr<fl::ClientAlgorithm>(std::move(c));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server, const fl::RoundInfo& round) override {
    const bool gen_phase = s_.neighgen && round.round <= s_.gen_rounds;
    if (v_.federated && (!gen_phase || s_.average_classifier_in_gen_rounds || round.round == 1)) {
      FGL_RETURN_IF_ERROR(fl::LoadTensors(from_server, model_->SharedParameters()));
    }
    if (gen_phase) {
      if (s_.cross_client) {
        FGL_RETURN_IF_ERROR(gen_memory_->Reallocate());
        FGL_RETURN_IF_ERROR(fl::LoadTensors(from_server, fl::WithPrefix(kGenPrefix, Named(*gen_))));
      }
      FGL_RETURN_IF_ERROR(TrainGenerator(round));
    } else {
      if (s_.neighgen && !mended_ && gen_memory_->phase() == nn::ParameterResidency::Phase::kReleased) {
        return absl::FailedPreconditionError(absl::StrCat(
            v_.name, " client ", data_->id, " missed generator round ", s_.gen_rounds,
            ": its generator was released after an earlier one (every client trains in every round), so it cannot mend"));
      }
      if (s_.neighgen && !mended_) {
        if (s_.mend_with_average) {  // the server's mean of the last generator round's uploads
          if (absl::Status loaded = fl::LoadTensors(from_server, fl::WithPrefix(kGenPrefix, Named(*gen_)));
              !loaded.ok()) {
            return absl::FailedPreconditionError(absl::StrCat(
                v_.name, " client ", data_->id, ": mend_with_average needs the averaged NeighGen, sent in round ",
                s_.gen_rounds + 1, " only (", loaded.message(), ")"));
          }
        }
        FGL_RETURN_IF_ERROR(Mend());
      }
      FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed));
      last_loss_ = model_->last_loss();
    }
    fl::proto::Message reply;
    if (v_.federated) {
      reply = fl::ModelReply(model_->SharedParameters(), data_->data.num_nodes(), data_->id, round, v_.type);
      fl::AddWeight(s_.weighting, &reply);
      if (gen_phase && s_.cross_client) fl::AddTensors(fl::WithPrefix(kGenPrefix, Named(*gen_)), &reply);
    } else {  // nothing but the loss metric leaves the client
      reply.mutable_header()->set_sender(data_->id);
      reply.mutable_header()->set_round(round.round);
      reply.mutable_header()->set_type(v_.type);
    }
    fl::AddTrainLoss(last_loss_, &reply);
    if (gen_phase && release_generator_ && round.round < s_.gen_rounds) ReleaseGenerator();
    if (gen_phase && round.round == s_.gen_rounds) {
      FGL_RETURN_IF_ERROR(FinishGeneratorTraining());
      ParkUntilMending();
    }
    // NeighGen's large blocks, freed, wait in the tensor cache for the next request of their
    // sizes, which the next client makes only by chance (its graph's sizes differ), so they would
    // sit on top of the run's peak (1 GB more on Coauthor-Physics-20): give them back.
    if (gen_phase) nn::ReleaseCachedTensorMemory();
    return reply;
  }

  // The classifier on the client's graph (mended once the generator rounds are over); logits of
  // the original nodes only.
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message* global) override {
    FGL_ASSIGN_OR_RETURN(const OwnClassifier own, ScoreGlobal(global));
    torch::Tensor logits = model_->Predict().slice(0, 0, data_->data.num_nodes());
    own.Restore();
    return logits;
  }
  // The same classifier on another graph (the FedSage code's whole-graph test).
  absl::StatusOr<torch::Tensor> PredictGraph(const fl::ClientData& graph, const fl::proto::Message* global) override {
    FGL_ASSIGN_OR_RETURN(const OwnClassifier own, ScoreGlobal(global));
    torch::Tensor logits = model_->PredictOn(graph);
    own.Restore();
    return logits;
  }
  fl::GraphScoringClient* graph_scoring() override { return this; }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m = model_->SaveState();
    if (s_.neighgen) {
      if (gen_memory_->phase() == nn::ParameterResidency::Phase::kReleased) {
        (*m.mutable_scalars())[kReleased] = 1;
      } else if (gen_memory_->parked()) {  // read back for the checkpoint; the parameters stay on disk
        FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> parked, ReadParkedGenerator());
        fl::NamedTensors named = Named(*gen_);
        for (size_t i = 0; i < named.size(); ++i) named[i].second = parked[i];
        fl::AddTensors(fl::WithPrefix(kGenPrefix, named), &m);
      } else {
        fl::AddTensors(fl::WithPrefix(kGenPrefix, Named(*gen_)), &m);
      }
      if (joint_) {  // freed after the last generator round; spilled moments are read back
        const bool spilled = gen_memory_->moments_spilled();
        FGL_RETURN_IF_ERROR(gen_memory_->UnspillMoments());
        fl::SaveAdamState(*joint_, JointParameters(), kGenAdam, &m);
        if (spilled) KeepIfSpillFails(gen_memory_->SpillMoments());
      }
      (*m.mutable_scalars())[kMended] = mended_ ? 1 : 0;
      if (!mended_ && !joint_) (*m.mutable_scalars())[kGenTrained] = 1;
    }
    return m;
  }

  absl::Status RestoreState(const fl::proto::Message& state) override {
    fl::proto::Message rest = state;
    if (s_.neighgen) {
      const std::string who = absl::StrCat(v_.name, " client ", data_->id, " state");
      auto released = state.scalars().find(kReleased);
      const bool was_released = released != state.scalars().end() && released->second != 0;
      if (was_released && !release_generator_) {
        return absl::InvalidArgumentError(who + ": its generator was released, which this run never does");
      }
      auto mended = state.scalars().find(kMended);
      if (mended == state.scalars().end()) return absl::InvalidArgumentError(who + " lacks '" + kMended + "'");
      auto trained = state.scalars().find(kGenTrained);
      const bool was_trained = trained != state.scalars().end() && trained->second != 0;
      if (was_released && (mended->second != 0 || was_trained)) {
        return absl::InvalidArgumentError(who + ": released after the generator rounds");
      }
      if (gen_memory_->parked()) {  // the parked values are not needed, only the shapes
        FGL_RETURN_IF_ERROR(gen_memory_->UnspillMoments());
        gen_memory_->Drop();
      } else {
        FGL_RETURN_IF_ERROR(gen_memory_->Reallocate());
      }
      FGL_ASSIGN_OR_RETURN(auto gen, fl::TakeTensors(kGenPrefix, &rest));
      if (!was_released) {
        FGL_ASSIGN_OR_RETURN(fl::NamedTensors loaded, fl::MatchTensors(gen, Named(*gen_), who));
        torch::NoGradGuard no_grad;
        const fl::NamedTensors targets = Named(*gen_);
        for (size_t i = 0; i < targets.size(); ++i) targets[i].second.copy_(loaded[i].second);
      }
      if (mended->second == 0 && !was_trained) {  // still in the generator rounds: the joint optimiser resumes
        if (!joint_) FGL_RETURN_IF_ERROR(PrepareGeneratorTraining());  // freed by an earlier Mend
        FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(state));
        FGL_RETURN_IF_ERROR(fl::RestoreAdamState(state, tensors, JointParameters(), kGenAdam, who, joint_.get()));
      }
      FGL_RETURN_IF_ERROR(fl::TakeTensors(kGenAdam, &rest).status());
      *graph_ = *data_;
      mended_ = false;
      if (mended->second != 0) {
        FGL_RETURN_IF_ERROR(Mend());
      } else if (was_trained) {
        FGL_RETURN_IF_ERROR(FinishGeneratorTraining());
        ParkUntilMending();
      }
      if (was_released) ReleaseGenerator();
    }
    (*rest.mutable_scalars()).erase(kReleased);
    (*rest.mutable_scalars()).erase(kGenTrained);
    return model_->RestoreState(rest);
  }

 private:
  FedSageClient(const Variant& v, const Settings& s, std::shared_ptr<const fl::ClientData> data,
                std::shared_ptr<fl::ClientData> graph, const fl::MethodConfig& config,
                std::unique_ptr<fl::LocalModel> model)
      : v_(v), s_(s), data_(std::move(data)), graph_(std::move(graph)), config_(config), model_(std::move(model)) {}

  // Scoring the global model must not replace a classifier the client keeps through the
  // generator rounds (average_classifier_in_gen_rounds false): its values, put back after.
  struct OwnClassifier {
    fl::NamedTensors kept, into;
    void Restore() const {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < kept.size(); ++i) into[i].second.copy_(kept[i].second);
    }
  };
  absl::StatusOr<OwnClassifier> ScoreGlobal(const fl::proto::Message* global) {
    OwnClassifier own;
    if (!v_.federated || global == nullptr) return own;
    if (!s_.average_classifier_in_gen_rounds && !mended_) {
      own.into = model_->SharedParameters();
      for (const auto& [name, t] : own.into) own.kept.emplace_back(name, t.detach().clone());
    }
    FGL_RETURN_IF_ERROR(fl::LoadTensors(*global, model_->SharedParameters()));
    return own;
  }

  // Between generator rounds NeighGen's parameters wait only to be overwritten by the next
  // broadcast: with every client in every round they are released (280 MB per client on
  // Coauthor-CS) and reallocated when the broadcast arrives (gen_memory_->Reallocate). Where
  // SpillPays, the joint optimiser's large moments (560 MB per client on CS) wait on disk
  // meanwhile, bit for bit.
  void ReleaseGenerator() { KeepIfSpillFails(gen_memory_->Release()); }
  // Spilling only saves memory: when it fails (a full or missing $TMPDIR) the moments stay.
  void KeepIfSpillFails(const absl::Status& s) const {
    if (!s.ok()) LOG(WARNING) << v_.name << " client " << data_->id << " keeps its optimiser state in memory: " << s;
  }

  // Hides half of the nodes that are neither training nor test nodes (the targets) and builds the
  // optimiser NeighGen shares with the classifier during the generator rounds.
  absl::Status PrepareGeneratorTraining() {
    const torch::Tensor candidate = data_->split.train.logical_or(data_->split.test).logical_not();
    const std::vector<int64_t> hidden = ChooseHidden(
        candidate, s_.hidden_portion, graph::Rng::Derive(config_.seed, absl::StrCat("fedsage_plus/client/", data_->id)));
    FGL_ASSIGN_OR_RETURN(ImpairedGraph impaired,
                         HideNodes(data_->data.graph, data_->data.features, hidden, s_.max_pred));
    const torch::Device d = config_.device;
    FGL_ASSIGN_OR_RETURN(nn::GraphView view, nn::GraphView::Create(impaired.graph, d));
    const torch::Tensor kept = torch::tensor(impaired.kept, torch::kInt64).to(d);
    impaired_view_ = std::make_shared<nn::GraphView>(std::move(view));
    impaired_features_ = impaired.features.to(d);
    impaired_labels_ = data_->labels.index_select(0, kept);
    impaired_train_ = data_->split.train.index_select(0, kept);
    num_missing_ = impaired.num_missing.to(d);
    feature_loss_slots_ = num_missing_.clamp(0, static_cast<double>(s_.max_pred)).to(torch::kInt64);  // counts are whole
    if (s_.losses_on_train) {  // only the training nodes' slots are read by the feature loss
      loss_nodes_ = impaired_train_.nonzero().squeeze(1);
      feature_loss_slots_ = torch::where(impaired_train_, feature_loss_slots_, torch::zeros_like(feature_loss_slots_));
    }
    missing_ = impaired.missing.To(d);
    impaired_graph_ = std::move(impaired.graph);
    std::vector<torch::Tensor> params;
    for (const auto& [name, p] : JointParameters()) params.push_back(p);
    // nn::Adam: LibTorch's numbers without a fresh 279 MB mapping per temporary per step (CS).
    joint_ = std::make_unique<nn::Adam>(
        params, torch::optim::AdamOptions(config_.spec.lr()).weight_decay(config_.spec.weight_decay()));
    gen_memory_->set_optimizer(joint_.get());  // its large moments may wait on disk while released
    return absl::OkStatus();
  }

  // NeighGen's and the classifier's parameters, as the joint optimiser sees them.
  fl::NamedTensors JointParameters() const {
    fl::NamedTensors out = fl::WithPrefix(kGenPrefix, Named(*gen_));
    for (auto& p : fl::WithPrefix("classifier.", model_->Parameters())) out.push_back(std::move(p));
    return out;
  }

  // `local_epochs` joint steps on the impaired graph. The mended impaired graph is rebuilt every
  // epoch from dGen's rounded counts; its generated features carry gradients into fGen.
  absl::Status TrainGenerator(const fl::RoundInfo& round) {
    nn::DropoutSeedScope dropout_stream(round.seed);
    nn::GnnModel& classifier = model_->model();
    gen_->train();
    classifier.train();
    const int64_t n = impaired_graph_.num_nodes();
    for (int e = 0; e < config_.spec.local_epochs(); ++e) {
      joint_->zero_grad();
      const torch::Tensor noise =
          Noise(n, s_.latent, graph::Rng::Derive(round.seed, absl::StrCat("fedsage_plus/noise/", e)), config_.device);
      const NeighGenOutput out =
          gen_->forward(nn::NodeFeatures(impaired_features_), *impaired_view_, noise, feature_loss_slots_);
      torch::Tensor logits;
      if (s_.generated_unread) {  // OpenFGL's one-way edges: the impaired nodes read the impaired graph only
        logits = classifier.forward(nn::NodeFeatures(impaired_features_), *impaired_view_).logits;
      } else {
        FGL_ASSIGN_OR_RETURN(MendedGraph mended, MendGraph(impaired_graph_, impaired_features_, out.num_missing,
                                                          out.features, s_.truncate_counts));
        FGL_ASSIGN_OR_RETURN(nn::GraphView view, nn::GraphView::Create(mended.graph, config_.device));
        logits = classifier.forward(nn::NodeFeatures(mended.features), view).logits.slice(0, 0, n);
      }
      // NeighGen's count and feature losses over every impaired node, or the training nodes only
      // (the references' train_ilocs; none there: the classification term alone).
      torch::Tensor counts = out.num_missing, generated = out.features, truth = num_missing_;
      MissingNeighbours targets = missing_;
      if (s_.losses_on_train) {
        counts = counts.index_select(0, loss_nodes_);
        generated = generated.index_select(0, loss_nodes_);
        truth = truth.index_select(0, loss_nodes_);
        targets.index = targets.index.index_select(0, loss_nodes_);
      }
      torch::Tensor loss = s_.cls_weight * nn::MaskedCrossEntropy(logits, impaired_labels_, impaired_train_);
      if (truth.numel() > 0) {
        loss = s_.num_weight * torch::nn::functional::smooth_l1_loss(counts, truth) +
               s_.feat_weight * MissingFeatureLoss(generated, targets, truth) + loss;
      }
      if (s_.gen_loss_per_client) loss = loss / static_cast<double>(fl::ClientsPerRound(config_.spec));
      last_loss_ = loss.item<double>();
      if (!std::isfinite(last_loss_)) {
        return absl::InvalidArgumentError(absl::StrCat(v_.name, " client ", data_->id, ": generator loss is ",
                                                       last_loss_, " at epoch ", e + 1));
      }
      loss.backward();
      joint_->step();
    }
    // Gradients are rebuilt by the next round's first backward; between rounds they would only
    // hold memory (fGen's gradient alone is 280 MB per client on Coauthor-CS).
    for (const auto& [name, p] : JointParameters()) p.mutable_grad().reset();
    return absl::OkStatus();
  }

  // Ends the generator phase once: the classifier trains and predicts on the mended local graph
  // from then on (on the local graph itself under OpenFGL's one-way edges, which no original node
  // reads), and NeighGen's training state goes.
  absl::Status Mend() {
    absl::Status status = absl::OkStatus();
    if (!s_.generated_unread) {
      status = UnparkGenerator();
      if (status.ok()) status = MendLocalGraph();
    }
    if (status.ok()) {
      mended_ = true;
      status = FinishGeneratorTraining();  // a client that missed the last generator round still holds it
    }
    if (status.ok() || gen_memory_->parked()) ParkGenerator();  // a parked generator is freed again on failure too
    return status;
  }

  // The classifier's graph becomes the local graph mended with NeighGen's output (eval mode
  // unless mend_dropout; noise from the run's seed).
  absl::Status MendLocalGraph() {
    torch::NoGradGuard no_grad;
    const uint64_t seed = graph::Rng::Derive(config_.seed, absl::StrCat("fedsage_plus/mend/", data_->id));
    nn::DropoutSeedScope dropout_stream(graph::Rng::Derive(seed, "dropout"));
    gen_->train(s_.mend_dropout);
    const int64_t n = data_->data.num_nodes();
    const torch::Tensor noise = Noise(n, s_.latent, seed, config_.device);
    const NeighGenOutput out = gen_->forward(*data_->features, *data_->view, noise);
    FGL_ASSIGN_OR_RETURN(MendedGraph mended, MendGraph(data_->data.graph, data_->data.features.to(config_.device),
                                                      out.num_missing, out.features, s_.truncate_counts));
    const int64_t extra = mended.graph.num_nodes() - n;
    FGL_ASSIGN_OR_RETURN(nn::GraphView view, nn::GraphView::Create(mended.graph, config_.device));
    graph_->view = std::make_shared<nn::GraphView>(std::move(view));
    graph_->features = std::make_shared<nn::NodeFeatures>(nn::NodeFeatures::WithSparseCopy(mended.features));
    auto pad = [&](const torch::Tensor& t) { return torch::cat({t, torch::zeros({extra}, t.options())}); };
    graph_->labels = pad(data_->labels);
    graph_->split = {pad(data_->split.train), pad(data_->split.val), pad(data_->split.test)};
    VLOG(2) << v_.name << " client " << data_->id << ": mended with " << extra << " generated neighbours";
    return absl::OkStatus();
  }

  // From its last generator round on (ParkUntilMending), or once mended, a client's NeighGen is
  // read again only to mend and by a checkpoint (to rebuild the mended graph): its parameters wait
  // on disk (345 MB per client on Physics, 2.8 GB for all of CS-10's clients), written once per
  // run. If writing fails they stay in memory. Outside Mend, a parked generator's parameters are
  // freed and its file holds their values.
  void ParkGenerator() {
    if (!config_.device.is_cpu()) return;  // SpillFile holds CPU tensors
    // Unparked by Mend, unchanged: the file still holds them, and they are only freed again.
    if (absl::Status s = gen_memory_->Park(); !s.ok()) {
      LOG(WARNING) << v_.name << " client " << data_->id << " keeps NeighGen in memory: " << s;
    }
  }
  // After its last generator round a client reads NeighGen again only when it mends, in its next
  // round: parked until then, the clients trained earlier in that round do not hold theirs while
  // the others train (20 × 345 MB on Coauthor-Physics-20, whose peak was that round's). Not under
  // mend_with_average, whose mending loads the server's average into the parameters.
  void ParkUntilMending() {
    if (!s_.mend_with_average) ParkGenerator();
  }
  // Mending reads the parked parameters back, bit for bit; the file stays for ParkGenerator.
  absl::Status UnparkGenerator() {
    if (gen_memory_->phase() != nn::ParameterResidency::Phase::kParked) return absl::OkStatus();
    return Annotated(gen_memory_->Unpark());
  }
  absl::StatusOr<std::vector<torch::Tensor>> ReadParkedGenerator() const {
    absl::StatusOr<std::vector<torch::Tensor>> parked = gen_memory_->ReadParked();
    if (!parked.ok()) return Annotated(parked.status());
    return parked;
  }
  // A parked NeighGen's read error, with the client named.
  absl::Status Annotated(const absl::Status& s) const {
    if (s.ok()) return s;
    return absl::Status(s.code(), absl::StrCat(v_.name, " client ", data_->id, ": ", s.message()));
  }

  // one_optimizer: the classifier's optimiser continues from the joint one's moments and steps.
  // A joint optimiser never stepped (one built for a restore) has nothing to hand over.
  absl::Status HandOverClassifierMoments() {
    if (joint_->state().empty()) return absl::OkStatus();
    FGL_RETURN_IF_ERROR(joint_->Unspill());
    fl::proto::Message state;
    const fl::NamedTensors classifier = model_->Parameters();
    fl::AddTensors(classifier, &state);
    fl::SaveAdamState(*joint_, classifier, "adam.", &state);
    return model_->RestoreState(state);  // the same parameters under LocalModel's own names
  }

  // The generator's training state is never used again once its last round is over: the optimiser
  // moments (2 × fGen: 560 MB per client on Coauthor-CS, 690 MB on Physics) and the impaired graph
  // with its targets go at once, not when the client mends in the next round, so that no client
  // holds them while the others train. NeighGen's parameters stay (parked on disk where
  // ParkUntilMending can): mending, and a checkpoint's rebuild of the mended graph, read them.
  absl::Status FinishGeneratorTraining() {
    if (!joint_) return absl::OkStatus();
    if (s_.one_optimizer) {
      FGL_RETURN_IF_ERROR(HandOverClassifierMoments());
    }
    gen_memory_->set_optimizer(nullptr);
    joint_.reset();
    nn::Adam::ReleaseScratch();
    impaired_view_.reset();
    impaired_graph_ = graph::CsrGraph();
    impaired_features_ = impaired_labels_ = impaired_train_ = num_missing_ = feature_loss_slots_ = loss_nodes_ =
        torch::Tensor();
    missing_ = MissingNeighbours();
    return absl::OkStatus();
  }

  Variant v_;
  Settings s_;
  std::shared_ptr<const fl::ClientData> data_;
  std::shared_ptr<fl::ClientData> graph_;  // what the classifier sees: local, then mended
  fl::MethodConfig config_;
  std::unique_ptr<fl::LocalModel> model_;
  double last_loss_ = std::nan("");
  // NeighGen and its training data (only with neighgen).
  NeighGen gen_{nullptr};
  std::unique_ptr<nn::Adam> joint_;
  // Where NeighGen's parameters are: in memory, released between generator rounds
  // (ReleaseGenerator), or parked on disk (ParkGenerator); also spills joint_'s large moments.
  std::unique_ptr<nn::ParameterResidency> gen_memory_;
  graph::CsrGraph impaired_graph_;
  std::shared_ptr<nn::GraphView> impaired_view_;
  torch::Tensor impaired_features_, impaired_labels_, impaired_train_, num_missing_;
  torch::Tensor feature_loss_slots_;  // int64: the generated slots MissingFeatureLoss reads
  torch::Tensor loss_nodes_;          // int64: the nodes NeighGen's losses average over (losses_on_train)
  MissingNeighbours missing_;
  bool mended_ = false;
  bool release_generator_ = false;  // this run releases NeighGen between generator rounds
};

// FedAvg of the classifier (fl::ModelAverageServer); with the cross-client term, also the mean
// of the clients' NeighGen parameters during the generator rounds (both weighted by `weighting`).
class FedSageServer final : public fl::ServerAlgorithm {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Create(const Variant& v, const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(Settings s, ReadSettings(v, config));
    FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::ModelAverageServer> model,
                         fl::ModelAverageServer::Create(config, v.type, {fl::WeightScalar(s.weighting)}));
    std::unique_ptr<FedSageServer> server(new FedSageServer(v, s, std::move(model)));
    if (s.cross_client) server->gen_ = MakeNeighGen(s, config);
    return std::unique_ptr<fl::ServerAlgorithm>(std::move(server));
  }

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    FGL_ASSIGN_OR_RETURN(fl::proto::Message m, model_->Broadcast(round));
    // mend_with_average: the last generator round's mean goes out once more, for mending.
    if (gen_ && round.round <= s_.gen_rounds + (s_.mend_with_average ? 1 : 0)) {
      fl::AddTensors(fl::WithPrefix(kGenPrefix, Named(*gen_)), &m);
    }
    return m;
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    fl::proto::Message rest;  // the classifier's part; NeighGen's tensors are not copied
    FGL_ASSIGN_OR_RETURN(auto gen, fl::SplitTensors(kGenPrefix, reply, &rest));
    const bool expected = gen_ && static_cast<int>(reply.header().round()) <= s_.gen_rounds;
    const std::string who = absl::StrCat(v_.name, ": reply from client ", reply.header().sender());
    if (!expected && !gen.empty()) return absl::InvalidArgumentError(who + ": unexpected NeighGen tensors");
    fl::NamedTensors matched;
    if (expected) {
      FGL_ASSIGN_OR_RETURN(matched, fl::MatchTensors(gen, Named(*gen_), who));
    }
    FGL_RETURN_IF_ERROR(model_->Accumulate(rest));  // checks type, num_nodes and the classifier
    if (expected) {
      std::map<std::string, torch::Tensor> by_name(matched.begin(), matched.end());
      FGL_RETURN_IF_ERROR(gen_mean_->Accumulate(by_name, reply.scalars().at(fl::WeightScalar(s_.weighting))));
    }
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(model_->FinishRound(round));
    std::unique_ptr<fl::WeightedMean> mean = std::exchange(gen_mean_, std::make_unique<fl::WeightedMean>());
    if (!mean->CanReport()) return absl::OkStatus();
    FGL_ASSIGN_OR_RETURN(auto averaged, std::move(*mean).Report());
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : Named(*gen_)) t.copy_(averaged.at(name));
    return absl::OkStatus();
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    FGL_ASSIGN_OR_RETURN(fl::proto::Message m, model_->SaveState());
    if (gen_) fl::AddTensors(fl::WithPrefix(kGenPrefix, Named(*gen_)), &m);
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    fl::proto::Message rest = state;
    FGL_ASSIGN_OR_RETURN(auto gen, fl::TakeTensors(kGenPrefix, &rest));
    if (gen_) {
      FGL_ASSIGN_OR_RETURN(fl::NamedTensors loaded,
                           fl::MatchTensors(gen, Named(*gen_), absl::StrCat(v_.name, " server state")));
      torch::NoGradGuard no_grad;
      const fl::NamedTensors targets = Named(*gen_);
      for (size_t i = 0; i < targets.size(); ++i) targets[i].second.copy_(loaded[i].second);
    }
    return model_->RestoreState(rest);
  }
  fl::AggregateSource* aggregate_source() override { return model_->aggregate_source(); }

 private:
  FedSageServer(const Variant& v, const Settings& s, std::unique_ptr<fl::ModelAverageServer> model)
      : v_(v), s_(s), model_(std::move(model)) {}
  Variant v_;
  Settings s_;
  std::unique_ptr<fl::ModelAverageServer> model_;
  NeighGen gen_{nullptr};
  std::unique_ptr<fl::WeightedMean> gen_mean_ = std::make_unique<fl::WeightedMean>();
};

// LocSage's server: nothing to aggregate (as methods/local).
class LocSageServer final : public fl::ServerAlgorithm {
 public:
  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    fl::proto::Message m;
    m.mutable_header()->set_round(round.round);
    m.mutable_header()->set_type(kLocSage.type);
    return m;
  }
  absl::Status Accumulate(const fl::proto::Message&) override { return absl::OkStatus(); }
  absl::Status FinishRound(const fl::RoundInfo&) override { return absl::OkStatus(); }
  absl::StatusOr<fl::proto::Message> SaveState() const override { return fl::proto::Message(); }
  absl::Status RestoreState(const fl::proto::Message&) override { return absl::OkStatus(); }
};

template <const Variant& V>
absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(std::shared_ptr<const fl::ClientData> data,
                                                                 const fl::MethodConfig& config) {
  return FedSageClient::Create(V, std::move(data), config);
}

template <const Variant& V>
absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  if (!V.federated) {
    FGL_RETURN_IF_ERROR(ReadSettings(V, config).status());
    return std::unique_ptr<fl::ServerAlgorithm>(new LocSageServer);
  }
  return FedSageServer::Create(V, config);
}

}  // namespace

// Version 2: fGen computes only the slots that are read. The others' gradients were exact zeros, but
// the sums over nodes in the output layer's backward pass are grouped differently. Version 3: that
// layer's gradient by hand (neighgen.cc SlotOutput), one allocation instead of one per slot.
FGL_REGISTER_METHOD("fedsage_plus", MakeClient<kFedSagePlus>, MakeServer<kFedSagePlus>,
                    {fl::TypedParams(&Validate<kFedSagePlus>)}, 3);
FGL_REGISTER_METHOD("fedsage", MakeClient<kFedSage>, MakeServer<kFedSage>, {fl::TypedParams(&Validate<kFedSage>)});
FGL_REGISTER_METHOD("locsage", MakeClient<kLocSage>, MakeServer<kLocSage>, {fl::TypedParams(&Validate<kLocSage>)});

}  // namespace fgl::methods::fedsage_plus
