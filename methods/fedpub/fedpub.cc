// FED-PUB (Baek et al., ICML 2023), as OpenFGL runs it, with the paper's regularisers. The model
// is a masked GCN (gcn:layers=3,jk=last,masked=true: two GCN layers and a linear head, every
// weight under a learnable elementwise mask). Each round, client k:
//   1. loads every received parameter except its own masks (the initial model in round 1, then
//      its personalised model),
//   2. trains E epochs on CE + l1 * sum|masks| + loc_l2 * ||theta - theta_received||_2
//      (OpenFGL reads these terms from detached tensors, so they never reach its gradients; here
//      they do, as the paper intends),
//   3. uploads all parameters and its functional embedding: the mean eval-mode embedding of the
//      shared random proxy graph (proxy_graph.h, rebuilt from the seed in the broadcast).
// The server personalises: theta_i = sum_j softmax_j(10 * cos(e_i, e_j)) theta_j over the clients
// that replied. Clients are scored with their own trained model.
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "methods/fedpub/fedpub.pb.h"
#include "methods/fedpub/proxy_graph.h"
#include "nn/models/gnn_model.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedpub {
namespace {

constexpr char kType[] = "fedpub.weights";
constexpr char kEmbedding[] = "fedpub.embedding";
constexpr char kProxySeed[] = "proxy_seed";

bool IsMask(const std::string& name) { return name.size() >= 4 && name.compare(name.size() - 4, 4, "mask") == 0; }

// A masked model's parameters: {weights, masks}.
std::pair<fl::NamedTensors, fl::NamedTensors> Split(const fl::NamedTensors& all) {
  std::pair<fl::NamedTensors, fl::NamedTensors> out;
  for (const auto& p : all) (IsMask(p.first) ? out.second : out.first).push_back(p);
  return out;
}

class FedPubClient final : public fl::ModelClient {
 public:
  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server,
                                           const fl::RoundInfo& round) override {
    const FedPubParams& p = params_;
    const double l1 = p.l1(), loc_l2 = p.loc_l2();
    const fl::NamedTensors all = model_->Parameters();
    const std::pair<fl::NamedTensors, fl::NamedTensors> split = Split(all);
    const fl::NamedTensors& weights = split.first;
    const fl::NamedTensors& masks = split.second;
    if (masks.empty()) return absl::InvalidArgumentError("fedpub needs a masked model (gcn:...,masked=true)");
    FGL_RETURN_IF_ERROR(fl::LoadTensors(from_server, weights));  // masks stay local
    std::vector<torch::Tensor> received;
    for (const auto& [name, w] : weights) received.push_back(w.detach().clone());
    const bool first = round.round == 1;
    fl::LocalModel::Hooks hooks;
    hooks.extra_loss = [&](const nn::ModelOutput&) {
      torch::Tensor loss = torch::zeros({}, all.front().second.options());
      for (const auto& [name, m] : masks) loss = loss + l1 * m.abs().sum();
      if (!first) {
        for (size_t i = 0; i < weights.size(); ++i) loss = loss + loc_l2 * (weights[i].second - received[i]).norm();
      }
      return loss;
    };
    FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed, hooks));
    auto seed = from_server.scalars().find(kProxySeed);
    if (seed == from_server.scalars().end()) return absl::InvalidArgumentError("fedpub: broadcast lacks proxy_seed");
    if (!proxy_.has_value()) {
      FGL_ASSIGN_OR_RETURN(ProxyGraph p, MakeProxyGraph(config_.num_features, static_cast<uint64_t>(seed->second)));
      FGL_ASSIGN_OR_RETURN(nn::GraphView view, nn::GraphView::Create(p.graph, config_.device));
      proxy_.emplace(Proxy{nn::NodeFeatures(p.features.to(config_.device)), std::move(view)});
    }
    torch::Tensor embedding;
    {
      torch::NoGradGuard no_grad;
      model_->model().eval();
      const nn::ModelOutput out = model_->model().forward(proxy_->features, proxy_->view);
      if (p.embedding_before_activation() && !out.pre_activation.defined()) {
        return absl::InvalidArgumentError(absl::StrCat("fedpub.embedding_before_activation: model '",
                                                       config_.model_spec, "' has no message-passing layer"));
      }
      embedding = (p.embedding_before_activation() ? out.pre_activation : out.embedding).mean(0);
    }
    fl::proto::Message reply = fl::ModelReply(all, data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTensors({{kEmbedding, embedding}}, &reply);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

  // Scored on the model the client receives (`global`, eval.model GLOBAL or PERSONALIZED) under
  // its own masks: loading the broadcast's masks too would replace the ones Train keeps local.
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message* global) override {
    if (global != nullptr) FGL_RETURN_IF_ERROR(fl::LoadTensors(*global, Split(model_->Parameters()).first));
    return model_->Predict();
  }

 private:
  friend class fl::ModelClient;  // MakeWithParams: the params unpacked once, at creation
  struct Proxy {
    nn::NodeFeatures features;
    nn::GraphView view;
  };
  FedPubClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
               std::unique_ptr<fl::LocalModel> model, FedPubParams params)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)) {}

  const FedPubParams params_;
  std::optional<Proxy> proxy_;
};

class FedPubServer final : public fl::ServerAlgorithm, public fl::PersonalisedServer, public fl::AggregateSource {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Create(const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(FedPubParams params, fl::MethodParams<FedPubParams>(config));
    torch::manual_seed(config.seed);
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> model,
                         nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
    fl::NamedTensors initial;
    bool masked = false;
    for (const auto& item : model->named_parameters(true)) {
      initial.emplace_back(item.key(), item.value().detach().clone());
      masked |= IsMask(item.key());
    }
    if (!masked) {
      return absl::InvalidArgumentError(absl::StrCat("fedpub needs a masked model (e.g. gcn:layers=3,jk=last,masked=true), got '",
                                                     config.model_spec, "'"));
    }
    return std::unique_ptr<fl::ServerAlgorithm>(new FedPubServer(config, std::move(params), std::move(initial)));
  }

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override { return Message(global_, round); }
  fl::PersonalisedServer* personalised() override { return this; }
  absl::StatusOr<fl::proto::Message> BroadcastTo(int client, const fl::RoundInfo& round) override {
    auto it = personalised_.find(client);
    return Message(it == personalised_.end() ? global_ : it->second.parameters, round);
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    const int k = reply.header().sender();
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("fedpub: reply from client ", k, ": ", what));
    };
    if (reply.header().type() != kType) return bad("type '" + reply.header().type() + "'");
    auto n = reply.scalars().find("num_nodes");
    if (n == reply.scalars().end() || !(n->second > 0)) return bad("missing num_nodes");
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
    if (tensors.size() != global_.size() + 1) return bad("unexpected tensors");
    Reply r;
    r.weight = n->second;
    FGL_ASSIGN_OR_RETURN(r.parameters, fl::MatchTensors(tensors, global_, absl::StrCat("fedpub: reply from client ", k)));
    auto e = tensors.find(kEmbedding);
    if (e == tensors.end() || e->second.dim() != 1 || e->second.numel() < 1 ||
        !torch::isfinite(e->second).all().item<bool>()) {
      return bad("missing or non-finite functional embedding");
    }
    r.embedding = e->second.to(torch::kDouble);
    if (!replies_.emplace(k, std::move(r)).second) return bad("replied twice");
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo& round) override {
    std::map<int, Reply> replies = std::exchange(replies_, {});
    if (replies.empty()) return absl::OkStatus();
    const double scale = params_.norm_scale();
    std::vector<int> ids;
    for (const auto& [k, r] : replies) ids.push_back(k);
    const size_t embedding_size = replies.begin()->second.embedding.numel();
    for (const auto& [k, r] : replies) {
      if (static_cast<size_t>(r.embedding.numel()) != embedding_size) {
        return absl::InvalidArgumentError("fedpub: functional embeddings of different sizes");
      }
    }
    last_round_.clear();
    for (int i : ids) {
      std::vector<double> w;
      double total = 0;
      for (int j : ids) {
        const double cos = torch::nn::functional::cosine_similarity(
                               replies.at(i).embedding.unsqueeze(0), replies.at(j).embedding.unsqueeze(0),
                               torch::nn::functional::CosineSimilarityFuncOptions().dim(1))
                               .item<double>();
        w.push_back(std::exp(scale * cos));
        total += w.back();
      }
      fl::ServerAggregate a;
      a.clients = ids;
      a.parameters = Mix(replies, ids, w, total);
      personalised_[i] = a;
      last_round_.push_back(std::move(a));
    }
    // The node-weighted mean: what a client without a personalised model starts from.
    std::vector<double> nodes;
    double total = 0;
    for (int j : ids) {
      nodes.push_back(replies.at(j).weight);
      total += nodes.back();
    }
    global_ = Mix(replies, ids, nodes, total);
    return absl::OkStatus();
  }

  std::vector<fl::ServerAggregate> Aggregates() override { return last_round_; }
  fl::AggregateSource* aggregate_source() override { return this; }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m;
    m.mutable_header()->set_type("fedpub.state");
    fl::AddTensors(fl::WithPrefix("global.", global_), &m);
    for (const auto& [id, a] : personalised_) fl::AddTensors(fl::WithPrefix(absl::StrCat("client", id, "."), a.parameters), &m);
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    fl::proto::Message rest = state;
    FGL_ASSIGN_OR_RETURN(auto global, fl::TakeTensors("global.", &rest));
    FGL_ASSIGN_OR_RETURN(global_, Ordered(global, "global"));
    personalised_.clear();
    last_round_.clear();
    for (int id = 0; rest.tensors_size() > 0 && id < (1 << 20); ++id) {
      FGL_ASSIGN_OR_RETURN(auto tensors, fl::TakeTensors(absl::StrCat("client", id, "."), &rest));
      if (tensors.empty()) continue;
      fl::ServerAggregate a;
      FGL_ASSIGN_OR_RETURN(a.parameters, Ordered(tensors, absl::StrCat("client ", id)));
      personalised_[id] = std::move(a);
    }
    if (rest.tensors_size() > 0) return absl::InvalidArgumentError("fedpub state: unexpected tensor " + rest.tensors(0).name());
    return absl::OkStatus();
  }

 private:
  struct Reply {
    fl::NamedTensors parameters;
    torch::Tensor embedding;
    double weight = 0;
  };
  FedPubServer(const fl::MethodConfig& config, FedPubParams params, fl::NamedTensors initial)
      : config_(config), params_(std::move(params)), global_(std::move(initial)) {}
  // sum_j w_j / total * theta_j over the clients `ids`.
  static fl::NamedTensors Mix(const std::map<int, Reply>& replies, const std::vector<int>& ids,
                              const std::vector<double>& w, double total) {
    std::vector<const fl::NamedTensors*> sets;
    std::vector<double> weights;
    for (size_t j = 0; j < ids.size(); ++j) {
      sets.push_back(&replies.at(ids[j]).parameters);
      weights.push_back(w[j] / total);
    }
    return fl::WeightedSum(sets, weights);
  }
  absl::StatusOr<fl::NamedTensors> Ordered(const std::map<std::string, torch::Tensor>& tensors, const std::string& who) const {
    return fl::MatchTensors(tensors, global_, "fedpub state: " + who, /*require_finite=*/false);
  }
  fl::proto::Message Message(const fl::NamedTensors& tensors, const fl::RoundInfo& round) const {
    fl::proto::Message m = fl::ServerMessage(tensors, round, kType);
    // The proxy graph travels as its seed (clients rebuild it), not as 500 x F floats.
    (*m.mutable_scalars())[kProxySeed] = static_cast<double>(config_.seed % (uint64_t{1} << 52));
    return m;
  }

  fl::MethodConfig config_;
  const FedPubParams params_;
  fl::NamedTensors global_;
  std::map<int, fl::ServerAggregate> personalised_;
  std::map<int, Reply> replies_;
  std::vector<fl::ServerAggregate> last_round_;
};

}  // namespace

FGL_REGISTER_METHOD("fedpub", fl::ModelClient::MakeWithParams<FedPubClient, FedPubParams>, FedPubServer::Create,
                    {fl::TypedParams<FedPubParams>()});

}  // namespace fgl::methods::fedpub
