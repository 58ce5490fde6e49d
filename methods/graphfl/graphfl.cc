// GraphFL (Wang et al. 2020) as FedEgo's baselines run it (seeds_fedego.md §9.4): first-order
// MAML in two exchanges per round. Each client holds a fixed support set and query set.
//   exchange 0: every client loads the global w, runs E epochs of Adam on its support set and
//               replies with the gradient g_k of its query-set loss (no step);
//               the server takes the meta step u = w - meta_lr * mean_k g_k;
//   exchange 1: every client loads u, runs E more epochs on its support set and replies with
//               its weights; the server sets w = mean_k w_k (1/N, as the code).
// The global w is scored on every client, as the code evaluates after loading the average.
#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/aggregate/weighted_mean.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/tensor_codec.h"
#include "graph/random.h"
#include "methods/graphfl/graphfl.pb.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::graphfl {
namespace {

constexpr char kWeights[] = "graphfl.weights";
constexpr char kQueryGradient[] = "graphfl.query_gradient";

class GraphFlClient final : public fl::ModelClient {
 public:
  // The client's model trains on its support set only: its training mask is the support set.
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(const GraphFlParams p, fl::MethodParams<GraphFlParams>(config));
    std::vector<int64_t> pool = fl::MaskedNodes(data->split.train);
    graph::Rng rng(config.seed, absl::StrCat("graphfl/support_query/", data->id));
    rng.Shuffle(pool);
    const double share = static_cast<double>(p.support_nodes()) / (static_cast<double>(p.support_nodes()) + p.query_nodes());
    const int64_t wanted = static_cast<int64_t>(p.support_nodes()) + static_cast<int64_t>(p.query_nodes());
    const int64_t support = pool.size() >= static_cast<size_t>(wanted)
                                ? p.support_nodes()
                                : static_cast<int64_t>(share * static_cast<double>(pool.size()));
    const int64_t query = std::min<int64_t>(p.query_nodes(), static_cast<int64_t>(pool.size()) - support);
    if (support < 1 || query < 1) {
      return absl::FailedPreconditionError(absl::StrCat("graphfl: client ", data->id, " has ", pool.size(),
                                                        " training nodes, too few for a support and a query set"));
    }
    auto on_support = std::make_shared<fl::ClientData>(*data);
    on_support->split.train = torch::zeros_like(data->split.train);
    for (int64_t i = 0; i < support; ++i) on_support->split.train[pool[i]] = true;
    const torch::Tensor query_nodes =
        torch::tensor(std::vector<int64_t>(pool.begin() + support, pool.begin() + support + query), torch::kInt64)
            .to(data->labels.device());
    FGL_ASSIGN_OR_RETURN(auto model, fl::LocalModel::Create(on_support, config, config.seed));
    return std::unique_ptr<fl::ClientAlgorithm>(
        new GraphFlClient(std::move(on_support), config, std::move(model), query_nodes));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server,
                                           const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(from_server, model_->SharedParameters()));
    if (round.exchange == 1) {
      FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, TrainAndReply(round, kWeights));
      fl::AddWeight(fl::proto::UNIFORM, &reply);
      return reply;
    }
    if (round.exchange != 0) return absl::InvalidArgumentError(absl::StrCat("graphfl: no exchange ", round.exchange));
    FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed));
    FGL_ASSIGN_OR_RETURN(fl::NamedTensors gradient, QueryGradient(round.seed));
    fl::proto::Message reply = fl::ModelReply(gradient, data_->data.num_nodes(), data_->id, round, kQueryGradient);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

 private:
  GraphFlClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
                std::unique_ptr<fl::LocalModel> model, torch::Tensor query)
      : ModelClient(std::move(data), config, std::move(model)), query_(std::move(query)) {}

  // The gradient of the query-set cross-entropy at the adapted weights, without a step.
  absl::StatusOr<fl::NamedTensors> QueryGradient(uint64_t seed) {
    nn::DropoutSeedScope stream(graph::Rng::Derive(seed, "graphfl/query"));
    nn::GnnModel& model = model_->model();
    model.train();
    model.zero_grad();
    const nn::ModelOutput out = model.forward_centres(*data_->features, *data_->view, query_);
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(out.logits, data_->labels.index_select(0, query_));
    if (!std::isfinite(loss.item<double>())) {
      return absl::InvalidArgumentError(absl::StrCat("client ", data_->id, ": query loss is ", loss.item<double>()));
    }
    loss.backward();
    fl::NamedTensors gradient;
    for (auto& [name, p] : model_->SharedParameters()) {
      gradient.emplace_back(name, p.grad().defined() ? p.grad().detach().clone() : torch::zeros_like(p));
    }
    model.zero_grad();
    return gradient;
  }

  torch::Tensor query_;  // int64 node ids
};

class GraphFlServer final : public fl::ServerAlgorithm, public fl::MultiExchangeServer {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Make(const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(const GraphFlParams p, fl::MethodParams<GraphFlParams>(config));
    FGL_ASSIGN_OR_RETURN(auto average, fl::ModelAverageServer::Create(config, kWeights,
                                                                      {fl::WeightScalar(fl::proto::UNIFORM)}));
    return std::unique_ptr<fl::ServerAlgorithm>(new GraphFlServer(std::move(average), p.meta_lr()));
  }

  int ExchangesPerRound() const override { return 2; }
  const fl::MultiExchangeServer* multi_exchange() const override { return this; }
  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override { return average_->Broadcast(round); }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    const std::string& type = reply.header().type();
    if (type != (exchange_ == 0 ? kQueryGradient : kWeights)) {
      return absl::InvalidArgumentError(absl::StrCat("graphfl exchange ", exchange_, ": unexpected '", type,
                                                     "' reply from client ", reply.header().sender()));
    }
    if (exchange_ == 1) {
      FGL_RETURN_IF_ERROR(average_->Accumulate(reply));
      ++averaged_;
      return absl::OkStatus();
    }
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
    const std::string what = absl::StrCat("query gradient of client ", reply.header().sender());
    const fl::NamedTensors global = average_->GlobalParameters();
    if (tensors.size() != global.size()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has ", tensors.size(), " tensors, expected ", global.size()));
    }
    FGL_RETURN_IF_ERROR(fl::MatchTensors(tensors, global, what).status());
    return gradient_->Accumulate(tensors, 1.0);
  }

  // The exchange is the server's own count (0, 1, 0, ...), not the broadcasts': the driver also
  // broadcasts for evaluation.
  absl::Status FinishRound(const fl::RoundInfo& round) override {
    if (round.exchange != exchange_) {
      return absl::InternalError(absl::StrCat("graphfl: finishing exchange ", round.exchange, ", expected ", exchange_));
    }
    exchange_ = 1 - exchange_;
    torch::NoGradGuard no_grad;
    if (round.exchange == 1) {
      const int averaged = std::exchange(averaged_, 0);
      FGL_RETURN_IF_ERROR(average_->FinishRound(round));
      if (averaged == 0) {  // nobody fine-tuned: keep w, not the meta-stepped u
        for (auto& [name, w] : average_->GlobalParameters()) w.copy_(before_meta_step_.at(name));
      }
      return absl::OkStatus();
    }
    before_meta_step_.clear();
    for (auto& [name, w] : average_->GlobalParameters()) before_meta_step_[name] = w.detach().clone();
    std::unique_ptr<fl::WeightedMean> gradient = std::exchange(gradient_, std::make_unique<fl::WeightedMean>());
    if (!gradient->CanReport()) return absl::OkStatus();  // no gradient: the fine-tuning starts from w
    FGL_ASSIGN_OR_RETURN(const auto mean, std::move(*gradient).Report());
    for (auto& [name, w] : average_->GlobalParameters()) w.sub_(meta_lr_ * mean.at(name));
    return absl::OkStatus();
  }

  // Checkpoints fall between rounds, where only the global model persists.
  absl::StatusOr<fl::proto::Message> SaveState() const override { return average_->SaveState(); }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    exchange_ = 0;
    averaged_ = 0;
    return average_->RestoreState(state);
  }
  fl::AggregateSource* aggregate_source() override { return average_->aggregate_source(); }

 private:
  GraphFlServer(std::unique_ptr<fl::ModelAverageServer> average, double meta_lr)
      : average_(std::move(average)), meta_lr_(meta_lr) {}

  std::unique_ptr<fl::ModelAverageServer> average_;
  double meta_lr_;
  int exchange_ = 0;   // the exchange whose replies arrive now
  int averaged_ = 0;   // exchange-1 replies taken this round
  std::map<std::string, torch::Tensor> before_meta_step_;  // w, kept through exchange 1
  std::unique_ptr<fl::WeightedMean> gradient_ = std::make_unique<fl::WeightedMean>();
};

}  // namespace

FGL_REGISTER_METHOD("graphfl", GraphFlClient::Make, GraphFlServer::Make, {fl::TypedParams<GraphFlParams>()});

}  // namespace fgl::methods::graphfl
