// FedGTA (Li et al., VLDB 2024), as OpenFGL runs it. Each round, client k:
//   1. loads its personalised model (the initial global model until it has one),
//   2. trains E local epochs,
//   3. propagates its model's soft labels from the training nodes (5 steps, alpha 0.5), sets the
//      training rows to their one-hot labels, and uploads its parameters, the mixed moments of
//      the propagated labels and a confidence weight (topology_moments.h).
// The server gives every client that replied the mean of the replies whose moments have cosine
// similarity > 0.5 with its own (itself included), weighted by confidence. Clients are scored
// with their own (locally trained) model.
#include <cmath>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "methods/fedgta/fedgta.pb.h"
#include "methods/fedgta/topology_moments.h"
#include "nn/models/gnn_model.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedgta {
namespace {

constexpr char kType[] = "fedgta.weights";
constexpr char kMoments[] = "fedgta.moments";
constexpr char kConfidence[] = "confidence";

class FedGtaClient final : public fl::ModelClient {
 public:
  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server,
                                           const fl::RoundInfo& round) override {
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(from_server, params));
    const FedGtaParams& p = params_;
    FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed));
    torch::Tensor logits;
    {
      torch::NoGradGuard no_grad;
      model_->model().eval();
      logits = model_->model().forward(*data_->features, *data_->view).logits.to(torch::kCPU);
    }
    const int64_t c = config_.num_classes;
    const torch::Tensor train = data_->split.train.to(torch::kCPU, torch::kBool);
    const torch::Tensor propagated =
        LabelPropagation(data_->data.graph, torch::softmax(logits, 1), train,
                         p.prop_steps(), p.lp_alpha());
    const torch::Tensor one_hot = torch::one_hot(data_->data.labels.to(torch::kCPU), c).to(torch::kFloat);
    auto with_labels = [&](torch::Tensor x) { return torch::where(train.unsqueeze(1), one_hot, x); };
    const torch::Tensor raw = with_labels(torch::softmax(propagated, 1));
    const torch::Tensor sharpened = with_labels(torch::softmax(propagated / p.temperature(), 1));
    fl::proto::Message reply = fl::ModelReply(params, data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTensors({{kMoments, MixedMoments(raw, p.num_moments())}}, &reply);
    (*reply.mutable_scalars())[kConfidence] = ConfidenceWeight(data_->data.graph, sharpened);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

 private:
  friend class fl::ModelClient;  // MakeWithParams: the params unpacked once, at creation
  FedGtaClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
               std::unique_ptr<fl::LocalModel> model, FedGtaParams params)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)) {}

  const FedGtaParams params_;
};

class FedGtaServer final : public fl::ServerAlgorithm, public fl::PersonalisedServer, public fl::AggregateSource {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Create(const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(FedGtaParams params, fl::MethodParams<FedGtaParams>(config));
    torch::manual_seed(config.seed);  // the initial model every client starts from
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> model,
                         nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
    fl::NamedTensors initial;
    for (const auto& item : model->named_parameters(true)) initial.emplace_back(item.key(), item.value().detach().clone());
    return std::unique_ptr<fl::ServerAlgorithm>(new FedGtaServer(config, std::move(params), std::move(initial)));
  }

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    return Message(initial_, round);
  }
  fl::PersonalisedServer* personalised() override { return this; }
  absl::StatusOr<fl::proto::Message> BroadcastTo(int client, const fl::RoundInfo& round) override {
    auto it = personalised_.find(client);
    return Message(it == personalised_.end() ? initial_ : it->second.parameters, round);
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    const int sender = reply.header().sender();
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("fedgta: reply from client ", sender, ": ", what));
    };
    if (reply.header().type() != kType) return bad("type '" + reply.header().type() + "'");
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
    Reply r;
    FGL_ASSIGN_OR_RETURN(r.parameters,
                         fl::MatchTensors(tensors, initial_, absl::StrCat("fedgta: reply from client ", sender)));
    auto moments = tensors.find(kMoments);
    const int64_t want = 2 * static_cast<int64_t>(params_.num_moments()) * config_.num_classes;
    if (moments == tensors.end() || moments->second.numel() != want ||
        !torch::isfinite(moments->second).all().item<bool>()) {
      return bad(absl::StrCat("'", kMoments, "' must hold ", want, " finite values"));
    }
    r.moments = moments->second.flatten().to(torch::kDouble);
    auto confidence = reply.scalars().find(kConfidence);
    if (confidence == reply.scalars().end() || !std::isfinite(confidence->second) || confidence->second < 0) {
      return bad("missing or negative confidence");
    }
    r.confidence = confidence->second;
    if (tensors.size() != initial_.size() + 1) return bad("unexpected tensors");
    if (!replies_.emplace(sender, std::move(r)).second) return bad("replied twice");
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo& round) override {
    std::map<int, Reply> replies = std::exchange(replies_, {});
    const double accept = params_.accept_alpha();
    for (const auto& [src, mine] : replies) {
      std::vector<int> accepted;
      double total = 0;
      for (const auto& [j, other] : replies) {
        const double cos = torch::nn::functional::cosine_similarity(
                               mine.moments.unsqueeze(0), other.moments.unsqueeze(0),
                               torch::nn::functional::CosineSimilarityFuncOptions().dim(1))
                               .item<double>();
        if (j == src || cos > accept) {
          accepted.push_back(j);
          total += other.confidence;
        }
      }
      fl::ServerAggregate aggregate;
      aggregate.clients = accepted;
      std::vector<const fl::NamedTensors*> sets;
      std::vector<double> weights;
      for (int j : accepted) {
        sets.push_back(&replies.at(j).parameters);
        weights.push_back(total > 0 ? replies.at(j).confidence / total : 1.0 / accepted.size());
      }
      aggregate.parameters = fl::WeightedSum(sets, weights);
      personalised_[src] = std::move(aggregate);
    }
    last_round_ = {};
    for (const auto& [src, r] : replies) last_round_.push_back(src);
    return absl::OkStatus();
  }

  // One aggregate per client personalised in the last round, with the clients it averaged.
  std::vector<fl::ServerAggregate> Aggregates() override {
    std::vector<fl::ServerAggregate> out;
    for (int src : last_round_) out.push_back(personalised_.at(src));
    return out;
  }
  fl::AggregateSource* aggregate_source() override { return this; }

  // Each client's personalised model as FedGtaServerState.
  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m;
    m.mutable_header()->set_type("fedgta.state");
    FedGtaServerState state;
    for (const auto& [id, a] : personalised_) {  // a std::map: ascending clients
      FedGtaServerState::Personalised* p = state.add_personalised();
      p->set_client(id);
      for (const auto& [name, t] : a.parameters) *p->add_parameters() = fl::EncodeTensor(name, t);
    }
    fl::PackState(state, &m);
    return m;
  }
  // Every model is checked against the initial model's names and shapes before anything changes.
  absl::Status RestoreState(const fl::proto::Message& state) override {
    FGL_ASSIGN_OR_RETURN(const FedGtaServerState saved, fl::UnpackState<FedGtaServerState>(state, "fedgta state"));
    std::map<int, fl::ServerAggregate> restored;
    for (const FedGtaServerState::Personalised& p : saved.personalised()) {
      const std::string who = absl::StrCat("fedgta state: client ", p.client());
      if (!p.has_client() || p.client() < 0 || restored.count(p.client())) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": no valid client id, or listed twice"));
      }
      fl::proto::Message tensors;
      *tensors.mutable_tensors() = p.parameters();
      FGL_ASSIGN_OR_RETURN(auto decoded, fl::DecodeTensors(tensors));
      fl::ServerAggregate a;
      FGL_ASSIGN_OR_RETURN(a.parameters, fl::MatchTensors(decoded, initial_, who, /*require_finite=*/false));
      restored[p.client()] = std::move(a);
    }
    personalised_ = std::move(restored);
    last_round_.clear();
    return absl::OkStatus();
  }

 private:
  struct Reply {
    fl::NamedTensors parameters;
    torch::Tensor moments;
    double confidence = 0;
  };
  FedGtaServer(const fl::MethodConfig& config, FedGtaParams params, fl::NamedTensors initial)
      : config_(config), params_(std::move(params)), initial_(std::move(initial)) {}
  static fl::proto::Message Message(const fl::NamedTensors& tensors, const fl::RoundInfo& round) {
    return fl::ServerMessage(tensors, round, kType);
  }

  fl::MethodConfig config_;
  const FedGtaParams params_;
  fl::NamedTensors initial_;
  std::map<int, Reply> replies_;
  std::map<int, fl::ServerAggregate> personalised_;
  std::vector<int> last_round_;
};

}  // namespace

FGL_REGISTER_METHOD("fedgta", fl::ModelClient::MakeWithParams<FedGtaClient, FedGtaParams>, FedGtaServer::Create,
                    {fl::TypedParams<FedGtaParams>()});

}  // namespace fgl::methods::fedgta
