// GCFL+ (Xie et al., NeurIPS 2021), as OpenFGL runs it, for node classification with the whole
// model shared within a cluster. Each round, client k:
//   loads its cluster's model W, trains E local epochs, uploads the trained weights and the norm
//   of its last gradient, and goes back to W (it is scored with the model it received).
// The server appends each gradient norm to the client's sequence and, for each cluster whose
// updates dW_k = W_k - W nearly cancel (||mean dW|| < eps1) while some are large
// (max ||dW|| > eps2), with more than 2 members, after round 20 and once every client has
// seq_length norms: bipartitions the cluster by a minimum cut of the similarity max(D) - D, D
// the DTW distances between the members' last seq_length norms, and clears all sequences (so at
// most one split per round). Then each cluster's model moves by the node-weighted mean of its
// members' dW. eps1 0.05, eps2 0.1, seq_length 5.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "glog/logging.h"
#include "methods/gcfl_plus/gcfl_plus.pb.h"
#include "methods/gcfl_plus/clustering.h"
#include "nn/models/gnn_model.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::gcfl_plus {
namespace {

constexpr char kType[] = "gcfl_plus.weights";
constexpr char kGradNorm[] = "grad_norm";

class GcflPlusClient final : public fl::ModelClient {
 public:
  using ModelClient::ModelClient;

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server,
                                           const fl::RoundInfo& round) override {
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(from_server, params));
    std::vector<torch::Tensor> received;
    for (const auto& [name, p] : params) received.push_back(p.detach().clone());
    double grad_norm = 0;
    fl::LocalModel::Hooks hooks;
    hooks.after_backward = [&] {  // the norm of the last step's gradient is what is reported
      double sq = 0;
      for (const auto& [name, p] : params) {
        if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
      }
      grad_norm = std::sqrt(sq);
    };
    const absl::Status trained = model_->Train(config_.spec.local_epochs(), round.seed, hooks);
    fl::proto::Message reply = fl::ModelReply(params, data_->data.num_nodes(), data_->id, round, kType);
    (*reply.mutable_scalars())[kGradNorm] = grad_norm;
    fl::AddTrainLoss(model_->last_loss(), &reply);
    // Back to the received weights, also when training failed: the client keeps (and is scored
    // on) its cluster's model, as OpenFGL's W_old.
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) params[i].second.copy_(received[i]);
    FGL_RETURN_IF_ERROR(trained);
    return reply;
  }
};

class GcflPlusServer final : public fl::ServerAlgorithm, public fl::PersonalisedServer, public fl::AggregateSource {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Create(const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(GcflPlusParams params, fl::MethodParams<GcflPlusParams>(config));
    torch::manual_seed(config.seed);
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> model,
                         nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
    fl::NamedTensors initial = config.spec.shared_group().empty() ? fl::NamedTensors()
                                                           : model->named_group_parameters(config.spec.shared_group());
    if (config.spec.shared_group().empty()) {
      for (const auto& item : model->named_parameters(true)) initial.emplace_back(item.key(), item.value());
    }
    for (auto& [name, t] : initial) t = t.detach().clone();
    return std::unique_ptr<fl::ServerAlgorithm>(new GcflPlusServer(std::move(params), std::move(initial), config.spec.clients()));
  }

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    return Message(models_[0], round);
  }
  fl::PersonalisedServer* personalised() override { return this; }
  absl::StatusOr<fl::proto::Message> BroadcastTo(int client, const fl::RoundInfo& round) override {
    return Message(models_[ClusterOf(client)], round);
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    const int k = reply.header().sender();
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("gcfl_plus: reply from client ", k, ": ", what));
    };
    if (reply.header().type() != kType) return bad("type '" + reply.header().type() + "'");
    auto norm = reply.scalars().find(kGradNorm);
    auto n = reply.scalars().find("num_nodes");
    if (norm == reply.scalars().end() || !std::isfinite(norm->second) || norm->second < 0 ||
        n == reply.scalars().end() || !(n->second > 0)) {
      return bad("missing grad_norm or num_nodes");
    }
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
    if (tensors.size() != models_[0].size()) return bad("unexpected tensors");
    Reply r;
    r.grad_norm = norm->second;
    r.weight = n->second;
    const fl::NamedTensors& cluster = models_[ClusterOf(k)];
    FGL_ASSIGN_OR_RETURN(r.update, fl::MatchTensors(tensors, cluster, absl::StrCat("gcfl_plus: reply from client ", k)));
    for (size_t i = 0; i < cluster.size(); ++i) r.update[i].second = r.update[i].second - cluster[i].second;
    if (!replies_.emplace(k, std::move(r)).second) return bad("replied twice");
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo& round) override {
    std::map<int, Reply> replies = std::exchange(replies_, {});
    for (const auto& [k, r] : replies) sequences_[k].push_back(r.grad_norm);
    const GcflPlusParams& p = params_;
    const double eps1 = p.eps1(), eps2 = p.eps2();
    const size_t seq_length = static_cast<size_t>(p.seq_length());
    const int min_round = p.min_round();
    for (size_t c = 0; c < clusters_.size(); ++c) {
      std::vector<const Reply*> updates;
      for (int k : clusters_[c]) {
        if (replies.count(k)) updates.push_back(&replies.at(k));
      }
      if (updates.empty()) continue;
      double max_norm = 0;
      torch::Tensor mean = torch::zeros({0});
      for (const Reply* r : updates) {
        const torch::Tensor flat = Flatten(r->update);
        max_norm = std::max(max_norm, flat.norm().item<double>());
        mean = mean.numel() == 0 ? flat.clone() : mean + flat;
      }
      const double mean_norm = (mean / static_cast<double>(updates.size())).norm().item<double>();
      // OpenFGL asks every client's sequence to be long enough; a member that never replied
      // (left out, or only ever failed) has none, and is not long enough either.
      bool long_enough = true;
      for (const auto& [k, seq] : sequences_) long_enough &= seq.size() >= seq_length;
      for (int k : clusters_[c]) {
        auto seq = sequences_.find(k);
        long_enough &= seq != sequences_.end() && seq->second.size() >= seq_length;
      }
      VLOG(1) << "gcfl+ round " << round.round << " cluster " << c << " of " << clusters_.size() << " ("
              << clusters_[c].size() << " clients): |mean dW| " << mean_norm << " (split below " << eps1
              << "), max |dW| " << max_norm << " (split above " << eps2 << ")";
      if (mean_norm < eps1 && max_norm > eps2 && clusters_[c].size() > 2 && round.round > min_round &&
          long_enough) {
        Split(c, seq_length);
        LOG(INFO) << "gcfl+ round " << round.round << ": cluster " << c << " split; " << clusters_.size()
                  << " clusters now";
        for (auto& [k, seq] : sequences_) seq.clear();
        break;
      }
    }
    // Each cluster's model moves by the node-weighted mean update of its members that replied.
    last_round_.clear();
    torch::NoGradGuard no_grad;
    for (size_t c = 0; c < clusters_.size(); ++c) {
      double total = 0;
      std::vector<int> members;
      for (int k : clusters_[c]) {
        if (replies.count(k)) {
          total += replies.at(k).weight;
          members.push_back(k);
        }
      }
      if (members.empty()) continue;
      std::vector<const fl::NamedTensors*> updates;
      std::vector<double> weights;
      for (int k : members) {
        updates.push_back(&replies.at(k).update);
        weights.push_back(replies.at(k).weight / total);
      }
      const fl::NamedTensors step = fl::WeightedSum(updates, weights);
      for (size_t i = 0; i < models_[c].size(); ++i) models_[c][i].second.add_(step[i].second);
      last_round_.push_back({models_[c], members});
    }
    return absl::OkStatus();
  }

  std::vector<fl::ServerAggregate> Aggregates() override { return last_round_; }
  fl::AggregateSource* aggregate_source() override { return this; }

  // The clusters (ascending client ids), for logs and tests.
  const std::vector<std::vector<int>>& clusters() const { return clusters_; }

  // The clusters (members and model) and the gradient-norm sequences as GcflPlusServerState.
  absl::StatusOr<fl::proto::Message> SaveState() const override {
    GcflPlusServerState state;
    for (size_t c = 0; c < clusters_.size(); ++c) {
      GcflPlusServerState::Cluster* cluster = state.add_clusters();
      for (int k : clusters_[c]) cluster->add_members(k);
      for (const auto& [name, t] : models_[c]) *cluster->add_parameters() = fl::EncodeTensor(name, t);
    }
    for (const auto& [k, seq] : sequences_) {  // a std::map: ascending clients
      GcflPlusServerState::Sequence* s = state.add_sequences();
      s->set_client(k);
      for (double norm : seq) s->add_grad_norms(norm);
    }
    fl::proto::Message m;
    m.mutable_header()->set_type("gcfl_plus.state");
    fl::PackState(state, &m);
    return m;
  }
  // Everything is checked before anything changes, so a refused state leaves the server as it was.
  absl::Status RestoreState(const fl::proto::Message& message) override {
    FGL_ASSIGN_OR_RETURN(const GcflPlusServerState state,
                         fl::UnpackState<GcflPlusServerState>(message, "gcfl_plus state"));
    if (state.clusters_size() == 0) return absl::InvalidArgumentError("gcfl_plus state: no clusters");
    std::vector<fl::NamedTensors> models;
    std::vector<std::vector<int>> clusters;
    std::map<int, int> cluster_of;  // every member's cluster, to find a client listed twice
    for (int c = 0; c < state.clusters_size(); ++c) {
      const GcflPlusServerState::Cluster& cluster = state.clusters(c);
      const std::string who = absl::StrCat("gcfl_plus state: cluster ", c);
      std::vector<int> members;
      for (int k : cluster.members()) {
        FGL_RETURN_IF_ERROR(CheckClientId(k, absl::StrCat(who, " member")));
        if (auto [it, added] = cluster_of.emplace(k, c); !added) {
          return absl::InvalidArgumentError(
              absl::StrCat(who, ": client ", k, " is listed twice (also in cluster ", it->second, ")"));
        }
        // ClusterOf binary-searches the members.
        if (!members.empty() && k < members.back()) {
          return absl::InvalidArgumentError(absl::StrCat(who, ": members not in ascending order at client ", k));
        }
        members.push_back(k);
      }
      FGL_ASSIGN_OR_RETURN(fl::NamedTensors model, DecodeModel(cluster.parameters(), who));
      models.push_back(std::move(model));
      clusters.push_back(std::move(members));
    }
    std::map<int, std::vector<double>> sequences;
    for (const GcflPlusServerState::Sequence& s : state.sequences()) {
      const std::string who = absl::StrCat("gcfl_plus state: sequence of client ", s.client());
      if (!s.has_client()) return absl::InvalidArgumentError("gcfl_plus state: a sequence without a client");
      FGL_RETURN_IF_ERROR(CheckClientId(s.client(), who));
      // Only a client that replied has a sequence, and replying put it in a cluster.
      if (!cluster_of.count(s.client())) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": the client is in no cluster"));
      }
      for (int i = 0; i < s.grad_norms_size(); ++i) {
        const double norm = s.grad_norms(i);
        if (!std::isfinite(norm) || norm < 0) {  // as Accumulate refuses it
          return absl::InvalidArgumentError(
              absl::StrCat(who, ": grad_norms[", i, "] = ", norm, " is not a finite norm"));
        }
      }
      if (!sequences.emplace(s.client(), std::vector<double>(s.grad_norms().begin(), s.grad_norms().end())).second) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": listed twice"));
      }
    }
    models_ = std::move(models);
    clusters_ = std::move(clusters);
    sequences_ = std::move(sequences);
    replies_.clear();
    last_round_.clear();
    return absl::OkStatus();
  }

 private:
  struct Reply {
    fl::NamedTensors update;  // W_k - W_cluster
    double grad_norm = 0, weight = 0;
  };
  GcflPlusServer(GcflPlusParams params, fl::NamedTensors initial, int num_clients)
      : params_(std::move(params)), num_clients_(num_clients) {
    models_.push_back(std::move(initial));
    clusters_.push_back({});
  }
  // A client not seen before joins the first cluster (everyone starts there).
  int ClusterOf(int client) {
    for (size_t c = 0; c < clusters_.size(); ++c) {
      if (std::binary_search(clusters_[c].begin(), clusters_[c].end(), client)) return static_cast<int>(c);
    }
    clusters_[0].insert(std::upper_bound(clusters_[0].begin(), clusters_[0].end(), client), client);
    return 0;
  }
  void Split(size_t c, size_t seq_length) {
    const std::vector<int> ids = clusters_[c];
    const size_t n = ids.size();
    std::vector<std::vector<double>> dist(n, std::vector<double>(n, 0));
    double max_d = 0;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        const auto& a = sequences_.at(ids[i]);  // every member's is at least seq_length long
        const auto& b = sequences_.at(ids[j]);
        dist[i][j] = dist[j][i] = DtwDistance(std::vector<double>(a.end() - seq_length, a.end()),
                                              std::vector<double>(b.end() - seq_length, b.end()));
        max_d = std::max(max_d, dist[i][j]);
      }
    }
    for (auto& row : dist) {
      for (double& d : row) d = max_d - d;
    }
    const auto [left, right] = MinimumCut(dist);
    std::vector<int> a, b;
    for (int i : left) a.push_back(ids[i]);
    for (int i : right) b.push_back(ids[i]);
    clusters_[c] = a;
    clusters_.push_back(b);
    fl::NamedTensors copy;
    for (const auto& [name, t] : models_[c]) copy.emplace_back(name, t.clone());
    models_.push_back(std::move(copy));
    LOG(INFO) << "gcfl_plus: cluster " << c << " split into " << a.size() << " + " << b.size() << " clients";
  }
  // A client id of this federation (its size is unknown to servers made without it, as in tests).
  absl::Status CheckClientId(int k, const std::string& who) const {
    if (k < 0 || (num_clients_ > 0 && k >= num_clients_)) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": client ", k, " is not in [0, ", num_clients_, ")"));
    }
    return absl::OkStatus();
  }
  // A saved cluster model: exactly the model's tensors, with their shapes and dtypes, finite.
  absl::StatusOr<fl::NamedTensors> DecodeModel(
      const google::protobuf::RepeatedPtrField<fl::proto::Tensor>& parameters, const std::string& who) const {
    const fl::NamedTensors& like = models_[0];
    std::map<std::string, torch::Tensor> decoded;
    for (const fl::proto::Tensor& t : parameters) {
      absl::StatusOr<torch::Tensor> d = fl::DecodeTensor(t);
      if (!d.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": tensor '", t.name(), "': ", d.status().message()));
      }
      if (!decoded.emplace(t.name(), *std::move(d)).second) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": tensor '", t.name(), "' listed twice"));
      }
    }
    if (decoded.size() != like.size()) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": ", decoded.size(), " tensors, expected ", like.size()));
    }
    FGL_ASSIGN_OR_RETURN(fl::NamedTensors model, fl::MatchTensors(decoded, like, who));
    for (size_t i = 0; i < like.size(); ++i) {
      if (model[i].second.scalar_type() != like[i].second.scalar_type()) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": tensor '", like[i].first, "' is ",
                                                       c10::toString(model[i].second.scalar_type()), ", expected ",
                                                       c10::toString(like[i].second.scalar_type())));
      }
    }
    return model;
  }
  static torch::Tensor Flatten(const fl::NamedTensors& tensors) {
    std::vector<torch::Tensor> flat;
    for (const auto& [name, t] : tensors) flat.push_back(t.flatten().to(torch::kDouble));
    return torch::cat(flat);
  }
  static fl::proto::Message Message(const fl::NamedTensors& tensors, const fl::RoundInfo& round) {
    return fl::ServerMessage(tensors, round, kType);
  }

  const GcflPlusParams params_;  // unpacked once, in Create
  const int num_clients_;        // 0 when the config does not say
  std::vector<fl::NamedTensors> models_;   // one per cluster
  std::vector<std::vector<int>> clusters_;  // ascending client ids
  std::map<int, std::vector<double>> sequences_;
  std::map<int, Reply> replies_;
  std::vector<fl::ServerAggregate> last_round_;
};

}  // namespace

FGL_REGISTER_METHOD("gcfl_plus", fl::ModelClient::Make<GcflPlusClient>, GcflPlusServer::Create,
                    {fl::TypedParams<GcflPlusParams>()});

}  // namespace fgl::methods::gcfl_plus
