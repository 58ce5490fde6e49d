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

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
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
    const absl::Status trained = model_->Train(config_.local_epochs, round.seed, hooks);
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

class GcflPlusServer final : public fl::ServerAlgorithm {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Create(const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(GcflPlusParams params, fl::MethodParams<GcflPlusParams>(config));
    torch::manual_seed(config.seed);
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> model,
                         nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
    fl::NamedTensors initial = config.shared_group.empty() ? fl::NamedTensors()
                                                           : model->named_group_parameters(config.shared_group);
    if (config.shared_group.empty()) {
      for (const auto& item : model->named_parameters(true)) initial.emplace_back(item.key(), item.value());
    }
    for (auto& [name, t] : initial) t = t.detach().clone();
    return std::unique_ptr<fl::ServerAlgorithm>(new GcflPlusServer(std::move(params), std::move(initial)));
  }

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    return Message(models_[0], round);
  }
  bool PersonalisedBroadcast() const override { return true; }
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

  // The clusters (ascending client ids), for logs and tests.
  const std::vector<std::vector<int>>& clusters() const { return clusters_; }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m;
    m.mutable_header()->set_type("gcfl_plus.state");
    for (size_t c = 0; c < clusters_.size(); ++c) {
      fl::AddTensors(fl::WithPrefix(absl::StrCat("cluster", c, "."), models_[c]), &m);
      for (int k : clusters_[c]) (*m.mutable_scalars())[absl::StrCat("member.", k)] = static_cast<double>(c);
    }
    for (const auto& [k, seq] : sequences_) {
      fl::AddTensors({{absl::StrCat("sequence.", k), torch::tensor(seq, torch::kDouble)}}, &m);
    }
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    auto bad = [](const std::string& what) { return absl::InvalidArgumentError("gcfl_plus state: " + what); };
    std::map<int, std::vector<int>> members;
    for (const auto& [key, value] : state.scalars()) {
      int k = -1;
      if (key.rfind("member.", 0) != 0 || !absl::SimpleAtoi(key.substr(7), &k) || k < 0 || !(value >= 0) || value > 1e6) {
        return bad("unexpected scalar '" + key + "'");
      }
      members[static_cast<int>(value)].push_back(k);
    }
    fl::proto::Message rest = state;
    std::vector<fl::NamedTensors> models;
    std::vector<std::vector<int>> clusters;
    for (size_t c = 0; c < std::max<size_t>(1, members.size()); ++c) {
      FGL_ASSIGN_OR_RETURN(auto tensors, fl::TakeTensors(absl::StrCat("cluster", c, "."), &rest));
      FGL_ASSIGN_OR_RETURN(fl::NamedTensors model,
                           fl::MatchTensors(tensors, models_[0], absl::StrCat("gcfl_plus state: cluster ", c),
                                            /*require_finite=*/false));
      models.push_back(std::move(model));
      std::vector<int> ids = members[static_cast<int>(c)];
      std::sort(ids.begin(), ids.end());
      clusters.push_back(ids);
    }
    FGL_ASSIGN_OR_RETURN(auto sequences, fl::TakeTensors("sequence.", &rest));
    sequences_.clear();
    for (const auto& [key, t] : sequences) {
      int k = -1;
      if (!absl::SimpleAtoi(key, &k)) return bad("bad sequence '" + key + "'");
      const torch::Tensor d = t.to(torch::kDouble).contiguous();
      sequences_[k] = std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
    }
    if (rest.tensors_size() != 0) return bad("unexpected tensor '" + rest.tensors(0).name() + "'");
    models_ = std::move(models);
    clusters_ = std::move(clusters);
    last_round_.clear();
    return absl::OkStatus();
  }

 private:
  struct Reply {
    fl::NamedTensors update;  // W_k - W_cluster
    double grad_norm = 0, weight = 0;
  };
  GcflPlusServer(GcflPlusParams params, fl::NamedTensors initial) : params_(std::move(params)) {
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
  static torch::Tensor Flatten(const fl::NamedTensors& tensors) {
    std::vector<torch::Tensor> flat;
    for (const auto& [name, t] : tensors) flat.push_back(t.flatten().to(torch::kDouble));
    return torch::cat(flat);
  }
  static fl::proto::Message Message(const fl::NamedTensors& tensors, const fl::RoundInfo& round) {
    return fl::ServerMessage(tensors, round, kType);
  }

  const GcflPlusParams params_;  // unpacked once, in Create
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
