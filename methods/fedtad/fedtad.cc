// FedTAD (Zhu et al., IJCAI 2024) as a server-side plug-in: clients upload their class-wise
// knowledge reliability once (Prepare), train exactly as the base method does, and after the
// base method's aggregation the server distils the reliable knowledge of this round's local models
// into every aggregate it produced. "fedtad" is FedAvg with the plug-in; "<base>+fedtad" any
// other method whose server exposes its aggregates.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fl/forwarding_algorithm.h"
#include "fl/registry.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "graph/datasets.h"
#include "graph/random.h"
#include "methods/fedtad/distillation.h"
#include "methods/fedtad/fedtad.pb.h"
#include "methods/fedtad/reliability.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedtad {
namespace {

constexpr char kReliability[] = "fedtad.reliability";
constexpr char kBasePrepared[] = "fedtad.base_prepared";

// The ranges are declared on FedTadParams' fields; knn is also bounded by num_pseudo.
absl::Status Validate(const FedTadParams& p) {
  if (p.knn() > p.num_pseudo()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fedtad.knn = ", p.knn(), ": must be in [1, num_pseudo = ", p.num_pseudo(), "]"));
  }
  return absl::OkStatus();
}

// Why `phi` is not a class reliability vector φ_k (float [num_classes], finite, >= 0); "" when it is.
std::string ReliabilityProblem(const torch::Tensor& phi, int64_t num_classes) {
  if (phi.dim() != 1 || phi.size(0) != num_classes) {
    return absl::StrCat("has shape [", absl::StrJoin(phi.sizes(), ", "), "], not [", num_classes, "]");
  }
  if (!torch::isfinite(phi).all().item<bool>()) return "holds a non-finite value";
  if ((phi < 0).any().item<bool>()) return "holds a negative value";
  return "";
}

// The base client plus the one-off reliability upload; every other call is the base's.
class FedTadClient final : public fl::ForwardingClient, public fl::PreparingClient {
 public:
  FedTadClient(std::unique_ptr<fl::ClientAlgorithm> base, std::shared_ptr<const fl::ClientData> data,
               const fl::MethodConfig& config, FedTadParams params)
      : ForwardingClient(std::move(base)), data_(std::move(data)), config_(config), params_(std::move(params)) {}

  // Always prepares: the base's message, if it sends one, carries the reliability too.
  fl::PreparingClient* preparing() override { return this; }
  absl::StatusOr<fl::proto::Message> Prepare() override {
    fl::PreparingClient* const base_preparing = base().preparing();
    const bool base_prepared = base_preparing != nullptr;
    fl::proto::Message m;
    if (base_prepared) {
      FGL_ASSIGN_OR_RETURN(m, base_preparing->Prepare());
    } else {
      m.mutable_header()->set_type("fedtad.reliability");
      m.mutable_header()->set_sender(data_->id);
    }
    (*m.mutable_scalars())[kBasePrepared] = base_prepared ? 1 : 0;
    const FedTadParams& p = params_;
    const ReliabilityKind kind = p.reliability() == FedTadParams::EQUAL        ? ReliabilityKind::kEqual
                                 : p.reliability() == FedTadParams::NODE_COUNT ? ReliabilityKind::kNodeCount
                                                                               : ReliabilityKind::kTopology;
    FGL_ASSIGN_OR_RETURN(torch::Tensor phi,
                         ClassReliability(data_->data.graph, data_->data.features, data_->data.labels,
                                          data_->split.train, config_.num_classes,
                                          kind, p.walk_length()));
    // The privacy variant perturbs what leaves the client, with the client's own randomness.
    if (const double sigma = p.reliability_noise(); sigma > 0) {
      phi = PerturbReliability(phi, sigma, graph::Rng::Derive(config_.seed, absl::StrCat("client/", data_->id)));
    }
    fl::AddTensors({{kReliability, phi}}, &m);
    return m;
  }

 private:
  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  FedTadParams params_;  // unpacked once, by WrapClient
};

// The base server; after each of its rounds, distillation into each of its aggregates.
class FedTadServer final : public fl::ForwardingServer, public fl::PreparedServer {
 public:
  FedTadServer(std::unique_ptr<fl::ServerAlgorithm> base, std::unique_ptr<DataFreeDistiller> distiller,
               int64_t num_classes)
      : ForwardingServer(std::move(base)), distiller_(std::move(distiller)), num_classes_(num_classes) {}

  // Takes every client's reliability, and passes the base's preparation on to the base.
  fl::PreparedServer* prepared() override { return this; }
  absl::Status AcceptPreparation(const fl::proto::Message& message) override {
    const int sender = message.header().sender();
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(message));
    auto phi = tensors.find(kReliability);
    const std::string problem =
        phi == tensors.end() ? "missing" : ReliabilityProblem(phi->second, num_classes_);
    if (!problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("fedtad: client ", sender, " sent no valid '", kReliability,
                                                     "' [", num_classes_, "] (finite, >= 0): ", problem));
    }
    if (reliability_.count(sender)) {
      return absl::InvalidArgumentError(absl::StrCat("fedtad: client ", sender, " prepared twice"));
    }
    reliability_[sender] = phi->second.to(torch::kFloat);
    auto base_prepared = message.scalars().find(kBasePrepared);
    if (base_prepared != message.scalars().end() && base_prepared->second != 0) {
      fl::proto::Message inner = message;
      inner.mutable_scalars()->erase(kBasePrepared);
      for (int i = inner.tensors_size() - 1; i >= 0; --i) {
        if (inner.tensors(i).name() == kReliability) inner.mutable_tensors()->DeleteSubrange(i, 1);
      }
      return fl::AcceptPreparationOf(base(), inner);
    }
    return absl::OkStatus();
  }
  absl::Status FinishPreparation() override { return fl::FinishPreparationOf(base()); }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    FGL_RETURN_IF_ERROR(base().Accumulate(reply));
    // The base method checked the reply; its tensors are this client's local model.
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
    local_models_[reply.header().sender()] = std::move(tensors);
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(base().FinishRound(round));
    std::map<int, std::map<std::string, torch::Tensor>> locals = std::exchange(local_models_, {});
    if (locals.empty()) return absl::OkStatus();
    const std::vector<fl::ServerAggregate> aggregates = fl::AggregatesOf(base());
    if (aggregates.empty()) {
      return absl::FailedPreconditionError("fedtad: the base method exposes no aggregated model to distil into");
    }
    for (size_t a = 0; a < aggregates.size(); ++a) {
      const fl::ServerAggregate& aggregate = aggregates[a];
      std::vector<int> ids;
      std::vector<torch::Tensor> phi;
      std::vector<Teacher> teachers;
      for (int id : aggregate.clients) {
        auto local = locals.find(id);
        auto rel = reliability_.find(id);
        if (local == locals.end()) continue;
        if (rel == reliability_.end()) {
          return absl::FailedPreconditionError(absl::StrCat("fedtad: no reliability from client ", id));
        }
        // The base method checked the reply's values; here only that it holds this aggregate's model.
        Teacher t;
        FGL_ASSIGN_OR_RETURN(t.parameters, fl::MatchTensors(local->second, aggregate.parameters,
                                                            absl::StrCat("fedtad: client ", id, "'s model"),
                                                            /*require_finite=*/false));
        for (size_t i = 0; i < t.parameters.size(); ++i) {
          t.parameters[i].second = t.parameters[i].second.to(aggregate.parameters[i].second.device());
        }
        teachers.push_back(std::move(t));
        phi.push_back(rel->second);
      }
      if (teachers.empty()) continue;
      const torch::Tensor weights = NormalizeAcrossClients(torch::stack(phi));
      for (size_t k = 0; k < teachers.size(); ++k) teachers[k].weight = weights[k];
      FGL_RETURN_IF_ERROR(distiller_->Distill(aggregate.parameters, teachers, static_cast<int>(a),
                                              DistillSeed(round.seed, static_cast<int>(a))));
    }
    return absl::OkStatus();
  }

  // The base's state, the distiller's named tensors, and the reliabilities as FedTadServerState.
  absl::StatusOr<fl::proto::Message> SaveState() const override {
    FGL_ASSIGN_OR_RETURN(fl::proto::Message m, base().SaveState());
    distiller_->SaveState(&m);
    FedTadServerState state;
    for (const auto& [id, phi] : reliability_) {  // a std::map: ascending ids
      FedTadServerState::ClientReliability* r = state.add_reliability();
      r->set_client(id);
      *r->mutable_phi() = fl::EncodeTensor("phi", phi);
    }
    fl::PackState(state, &m);
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    FGL_ASSIGN_OR_RETURN(auto reliability, RestoreReliability(state));  // checked before anything changes
    fl::proto::Message base_state = state;
    fl::EraseState<FedTadServerState>(&base_state);
    base_state.mutable_tensors()->Clear();
    for (const auto& t : state.tensors()) {
      if (t.name().rfind("fedtad.", 0) != 0) *base_state.add_tensors() = t;
    }
    for (auto it = base_state.mutable_scalars()->begin(); it != base_state.mutable_scalars()->end();) {
      it = it->first.rfind("fedtad.", 0) == 0 ? base_state.mutable_scalars()->erase(it) : std::next(it);
    }
    FGL_RETURN_IF_ERROR(base().RestoreState(base_state));
    FGL_RETURN_IF_ERROR(distiller_->RestoreState(state));
    reliability_ = std::move(reliability);
    return absl::OkStatus();
  }

 private:
  // The reliabilities of a checkpoint's FedTadServerState, each checked as an upload is.
  absl::StatusOr<std::map<int, torch::Tensor>> RestoreReliability(const fl::proto::Message& state) const {
    FGL_ASSIGN_OR_RETURN(const FedTadServerState saved, fl::UnpackState<FedTadServerState>(state, "fedtad state"));
    std::map<int, torch::Tensor> reliability;
    for (const FedTadServerState::ClientReliability& r : saved.reliability()) {
      const std::string client = absl::StrCat("fedtad state: client ", r.client());
      if (!r.has_client() || r.client() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(client, ": no valid client id"));
      }
      if (!r.has_phi()) return absl::InvalidArgumentError(absl::StrCat(client, ": no reliability phi"));
      absl::StatusOr<torch::Tensor> phi = fl::DecodeTensor(r.phi());
      if (!phi.ok()) return absl::InvalidArgumentError(absl::StrCat(client, ": ", phi.status().message()));
      // Saved as float32 (what AcceptPreparation keeps): any other dtype is not our checkpoint.
      const std::string problem = phi->scalar_type() != torch::kFloat
                                      ? absl::StrCat("is ", c10::toString(phi->scalar_type()), ", not float32")
                                      : ReliabilityProblem(*phi, num_classes_);
      if (!problem.empty()) return absl::InvalidArgumentError(absl::StrCat(client, ": reliability ", problem));
      if (!reliability.emplace(r.client(), *std::move(phi)).second) {
        return absl::InvalidArgumentError(absl::StrCat(client, " appears twice"));
      }
    }
    return reliability;
  }

  std::unique_ptr<DataFreeDistiller> distiller_;
  int64_t num_classes_;
  std::map<int, torch::Tensor> reliability_;
  std::map<int, std::map<std::string, torch::Tensor>> local_models_;
};

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> WrapClient(std::unique_ptr<fl::ClientAlgorithm> base,
                                                                 std::shared_ptr<const fl::ClientData> data,
                                                                 const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedTadParams p, fl::MethodParams<FedTadParams>(config));
  return std::unique_ptr<fl::ClientAlgorithm>(new FedTadClient(std::move(base), std::move(data), config, std::move(p)));
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> WrapServer(std::unique_ptr<fl::ServerAlgorithm> base,
                                                                 const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(const FedTadParams p, fl::MethodParams<FedTadParams>(config));
  FGL_RETURN_IF_ERROR(fl::CheckParamRanges(p));
  FGL_RETURN_IF_ERROR(Validate(p));
  if (const int exchanges = fl::ExchangesOf(*base); exchanges != 1) {
    // The plug-in distils what each FinishRound() produced: with several exchanges it would
    // distil the intermediate ones (GraphFL's query gradients) and drop the later exchanges.
    return absl::InvalidArgumentError(absl::StrCat("fedtad: the base method exchanges ", exchanges,
                                                   " times per round; the plug-in needs one"));
  }
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<DataFreeDistiller> distiller,
                       DataFreeDistiller::Create(config.model_spec, config.num_features, config.num_classes,
                                                 FromParams(p, config.spec.eval().dropout_at_eval()), config.seed, config.device));
  if (p.real_graph()) {
    // Fig. 4(a) r-eq, an oracle ablation: the server loads the whole dataset (every node and edge,
    // no labels used) and distils on it instead of pseudo graphs.
    absl::StatusOr<graph::Dataset> data = graph::LoadDataset(config.spec.dataset(), config.spec.data_dir(), config.spec.partition_seed());
    if (!data.ok()) {
      return absl::Status(data.status().code(),
                          absl::StrCat("fedtad.real_graph: the server loads the whole dataset: ", data.status().message()));
    }
    FGL_ASSIGN_OR_RETURN(nn::GraphView view, nn::GraphView::Create(data->graph, config.device));
    distiller->UseRealGraph(
        std::make_shared<const nn::NodeFeatures>(nn::NodeFeatures::WithSparseCopy(data->features.to(config.device))),
        std::make_shared<const nn::GraphView>(std::move(view)));
  }
  return std::unique_ptr<fl::ServerAlgorithm>(
      new FedTadServer(std::move(base), std::move(distiller), config.num_classes));
}

}  // namespace

FGL_REGISTER_PLUGIN("fedtad", WrapClient, WrapServer, {fl::TypedParams<FedTadParams>(&Validate)});

// FedTAD as the paper runs it: FedAvg plus the plug-in (resolved when used, so registration
// order does not matter).
FGL_REGISTER_METHOD(
    "fedtad",
    [](std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config)
        -> absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> {
      FGL_ASSIGN_OR_RETURN(fl::MethodFactories f, fl::FindMethod("fedavg+fedtad"));
      return f.client(std::move(data), config);
    },
    [](const fl::MethodConfig& config) -> absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> {
      FGL_ASSIGN_OR_RETURN(fl::MethodFactories f, fl::FindMethod("fedavg+fedtad"));
      return f.server(config);
    },
    {fl::TypedParams<FedTadParams>(&Validate)});

}  // namespace fgl::methods::fedtad
