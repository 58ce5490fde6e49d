#include "fl/model_average_server.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "glog/logging.h"
#include "absl/strings/str_cat.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

ModelAverageServer::ModelAverageServer(std::shared_ptr<nn::GnnModel> model, std::string group,
                                       std::string type, std::vector<std::string> weights)
    : model_(std::move(model)), group_(std::move(group)), type_(std::move(type)), weights_(std::move(weights)) {
  ResetMeans();
}

void ModelAverageServer::ResetMeans() {
  means_.clear();
  for (size_t i = 0; i < weights_.size(); ++i) means_.push_back(std::make_unique<WeightedMean>());
}

absl::StatusOr<std::unique_ptr<ModelAverageServer>> ModelAverageServer::Create(
    const MethodConfig& config, const std::string& type, std::vector<std::string> weights) {
  if (weights.empty()) return absl::InvalidArgumentError("ModelAverageServer: no weight scalar named");
  // The global initialisation every client starts from.
  torch::manual_seed(config.seed);
  FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> model,
                       nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
  return std::unique_ptr<ModelAverageServer>(
      new ModelAverageServer(std::move(model), config.spec.shared_group(), type, std::move(weights)));
}

NamedTensors ModelAverageServer::GlobalParameters() const {
  if (!group_.empty()) return model_->named_group_parameters(group_);
  NamedTensors out;
  for (const auto& item : model_->named_parameters(true)) out.emplace_back(item.key(), item.value());
  return out;
}

absl::StatusOr<proto::Message> ModelAverageServer::Broadcast(const RoundInfo& round) {
  return ServerMessage(GlobalParameters(), round, type_);
}

std::string WeightScalar(proto::ClientWeighting weighting) {
  return weighting == proto::UNIFORM ? "uniform_weight" : "num_nodes";
}

void AddWeight(proto::ClientWeighting weighting, proto::Message* reply) {
  if (weighting == proto::UNIFORM) (*reply->mutable_scalars())["uniform_weight"] = 1;
}

proto::Message ServerMessage(const NamedTensors& tensors, const RoundInfo& round, const std::string& type) {
  proto::Message m;
  m.mutable_header()->set_round(round.round);
  m.mutable_header()->set_sender(-1);
  m.mutable_header()->set_type(type);
  AddTensors(tensors, &m);
  return m;
}

absl::Status ModelAverageServer::Accumulate(const proto::Message& reply) {
  if (reply.header().type() != type_) {
    return absl::InvalidArgumentError(absl::StrCat("expected a '", type_, "' reply, got '",
                                                   reply.header().type(), "'"));
  }
  std::vector<double> weights;
  for (const std::string& name : weights_) {
    auto weight = reply.scalars().find(name);
    if (weight == reply.scalars().end()) {
      return absl::InvalidArgumentError(absl::StrCat("reply from client ", reply.header().sender(), " lacks ", name));
    }
    if (!(std::isfinite(weight->second) && weight->second > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("reply from client ", reply.header().sender(), ": weight ", name,
                                                     " = ", weight->second, " is not positive and finite"));
    }
    weights.push_back(weight->second);
  }
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(reply));
  // Only the global model's own tensors, with its shapes, are accepted.
  const NamedTensors global = GlobalParameters();
  if (tensors.size() != global.size()) {
    return absl::InvalidArgumentError(absl::StrCat("reply from client ", reply.header().sender(),
                                                   " has ", tensors.size(), " tensors, expected ",
                                                   global.size()));
  }
  for (const auto& [name, t] : global) {
    auto it = tensors.find(name);
    if (it == tensors.end() || it->second.sizes() != t.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat("reply from client ", reply.header().sender(),
                                                     ": missing or misshapen tensor '", name, "'"));
    }
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    absl::Status added = means_[i]->Accumulate(tensors, weights[i]);
    // Only the first can fail (on the tensors, checked once for all): later ones see the same.
    if (!added.ok()) {
      CHECK_EQ(i, 0u) << added;
      return added;
    }
  }
  accumulated_.push_back(reply.header().sender());
  return absl::OkStatus();
}

std::vector<ServerAggregate> ModelAverageServer::Aggregates() {
  return {ServerAggregate{GlobalParameters(), last_round_clients_}};
}

absl::Status ModelAverageServer::FinishRound(const RoundInfo& round) {
  std::vector<std::unique_ptr<WeightedMean>> means = std::move(means_);
  ResetMeans();
  last_round_clients_ = std::exchange(accumulated_, {});
  std::sort(last_round_clients_.begin(), last_round_clients_.end());
  if (!means.front()->CanReport()) return absl::OkStatus();  // nobody replied: keep the global model
  std::vector<std::map<std::string, torch::Tensor>> averaged;
  for (auto& mean : means) {
    FGL_ASSIGN_OR_RETURN(auto a, std::move(*mean).Report());
    averaged.push_back(std::move(a));
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : GlobalParameters()) {
    if (averaged.size() == 1) {
      t.copy_(averaged[0].at(name));
      continue;
    }
    torch::Tensor sum = torch::zeros_like(t, torch::kFloat64);
    for (const auto& a : averaged) sum += a.at(name).to(torch::kFloat64);
    t.copy_(sum / static_cast<double>(averaged.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ServerAlgorithm>> MakeModelAverageServer(const MethodConfig& config,
                                                                        const std::string& type,
                                                                        std::vector<std::string> weights) {
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ModelAverageServer> server,
                       ModelAverageServer::Create(config, type, std::move(weights)));
  return std::unique_ptr<ServerAlgorithm>(std::move(server));
}

absl::StatusOr<proto::Message> ModelAverageServer::SaveState() const {
  proto::Message m;
  m.mutable_header()->set_type(type_ + ".state");
  AddTensors(GlobalParameters(), &m);
  return m;
}

absl::Status ModelAverageServer::RestoreState(const proto::Message& state) {
  return LoadTensors(state, GlobalParameters());
}

absl::StatusOr<std::unique_ptr<ModelAndMeanServer>> ModelAndMeanServer::Create(
    const MethodConfig& config, const std::string& type, const std::string& prefix) {
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ModelAverageServer> model, ModelAverageServer::Create(config, type));
  NamedTensors side;
  for (const auto& [name, p] : model->GlobalParameters()) side.emplace_back(name, torch::zeros_like(p));
  return std::unique_ptr<ModelAndMeanServer>(new ModelAndMeanServer(std::move(model), prefix, std::move(side)));
}

absl::StatusOr<proto::Message> ModelAndMeanServer::Broadcast(const RoundInfo& round) {
  FGL_ASSIGN_OR_RETURN(proto::Message m, model_->Broadcast(round));
  AddTensors(WithPrefix(prefix_, side_), &m);
  return m;
}

absl::Status ModelAndMeanServer::Accumulate(const proto::Message& reply) {
  proto::Message model_part;
  FGL_ASSIGN_OR_RETURN(auto side, SplitTensors(prefix_, reply, &model_part));
  for (const auto& [name, t] : side_) {
    auto it = side.find(name);
    if (it == side.end() || it->second.sizes() != t.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat("reply from client ", reply.header().sender(),
                                                     ": missing or misshapen tensor '", prefix_, name, "'"));
    }
  }
  if (side.size() != side_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("reply from client ", reply.header().sender(), " has ",
                                                   side.size(), " '", prefix_, "' tensors, expected ", side_.size()));
  }
  // Both parts are checked before either is used: a bad reply leaves no trace.
  for (const auto& [name, t] : side) {
    if (!AllFinite(t)) {
      return absl::InvalidArgumentError(absl::StrCat("reply from client ", reply.header().sender(), ": '",
                                                     prefix_, name, "' is not finite"));
    }
  }
  FGL_RETURN_IF_ERROR(model_->Accumulate(model_part));
  return side_mean_->Accumulate(side, 1.0);
}

absl::Status ModelAndMeanServer::FinishRound(const RoundInfo& round) {
  FGL_RETURN_IF_ERROR(model_->FinishRound(round));
  std::unique_ptr<WeightedMean> mean = std::exchange(side_mean_, std::make_unique<WeightedMean>());
  if (!mean->CanReport()) return absl::OkStatus();
  FGL_ASSIGN_OR_RETURN(auto averaged, std::move(*mean).Report());
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : side_) t.copy_(averaged.at(name));
  return absl::OkStatus();
}

absl::StatusOr<proto::Message> ModelAndMeanServer::SaveState() const {
  FGL_ASSIGN_OR_RETURN(proto::Message m, model_->SaveState());
  AddTensors(WithPrefix(prefix_, side_), &m);
  return m;
}

absl::Status ModelAndMeanServer::RestoreState(const proto::Message& state) {
  proto::Message model_part = state;
  FGL_ASSIGN_OR_RETURN(auto side, TakeTensors(prefix_, &model_part));
  FGL_RETURN_IF_ERROR(model_->RestoreState(model_part));
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : side_) {
    auto it = side.find(name);
    if (it == side.end() || it->second.sizes() != t.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat("server state lacks '", prefix_, name, "'"));
    }
    t.copy_(it->second);
  }
  return absl::OkStatus();
}

proto::Message ModelReply(const NamedTensors& parameters, int64_t num_nodes, int client_id,
                          const RoundInfo& round, const std::string& type) {
  proto::Message m;
  m.mutable_header()->set_round(round.round);
  m.mutable_header()->set_sender(client_id);
  m.mutable_header()->set_receiver(-1);
  m.mutable_header()->set_type(type);
  AddTensors(parameters, &m);
  (*m.mutable_scalars())["num_nodes"] = static_cast<double>(num_nodes);
  return m;
}

void AddTrainLoss(double loss, proto::Message* reply) {
  if (std::isfinite(loss)) (*reply->mutable_scalars())["train_loss"] = loss;
}

}  // namespace fgl::fl
