// Bases for plug-ins that wrap another method's client or server ("<base>+fedtad"): every call is
// passed to the base, so a wrapper overrides only what it adds and cannot silently drop a call.
// A virtual added to fl/algorithm.h must be forwarded here too (forwarding_algorithm_test checks
// each one).
#ifndef FGL_FL_FORWARDING_ALGORITHM_H_
#define FGL_FL_FORWARDING_ALGORITHM_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fl/algorithm.h"

namespace fgl::fl {

class ForwardingClient : public ClientAlgorithm {
 public:
  explicit ForwardingClient(std::unique_ptr<ClientAlgorithm> base) : base_(std::move(base)) {}

  absl::StatusOr<std::optional<proto::Message>> Prepare() override { return base_->Prepare(); }
  absl::StatusOr<proto::Message> Train(const proto::Message& from_server, const RoundInfo& round) override {
    return base_->Train(from_server, round);
  }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message* global) override { return base_->Predict(global); }
  absl::StatusOr<torch::Tensor> PredictGraph(const ClientData& graph, const proto::Message* global) override {
    return base_->PredictGraph(graph, global);
  }
  std::map<std::string, double> Reports() const override { return base_->Reports(); }
  absl::StatusOr<proto::Message> SaveState() const override { return base_->SaveState(); }
  absl::Status RestoreState(const proto::Message& state) override { return base_->RestoreState(state); }

 protected:
  ClientAlgorithm& base() { return *base_; }
  const ClientAlgorithm& base() const { return *base_; }

 private:
  std::unique_ptr<ClientAlgorithm> base_;
};

class ForwardingServer : public ServerAlgorithm {
 public:
  explicit ForwardingServer(std::unique_ptr<ServerAlgorithm> base) : base_(std::move(base)) {}

  absl::Status AcceptPreparation(const proto::Message& message) override { return base_->AcceptPreparation(message); }
  absl::Status FinishPreparation() override { return base_->FinishPreparation(); }
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) override { return base_->Broadcast(round); }
  bool PersonalisedBroadcast() const override { return base_->PersonalisedBroadcast(); }
  absl::StatusOr<proto::Message> BroadcastTo(int client, const RoundInfo& round) override {
    return base_->BroadcastTo(client, round);
  }
  int ExchangesPerRound() const override { return base_->ExchangesPerRound(); }
  absl::Status Accumulate(const proto::Message& reply) override { return base_->Accumulate(reply); }
  absl::Status FinishRound(const RoundInfo& round) override { return base_->FinishRound(round); }
  absl::StatusOr<proto::Message> SaveState() const override { return base_->SaveState(); }
  absl::Status RestoreState(const proto::Message& state) override { return base_->RestoreState(state); }
  std::vector<ServerAggregate> Aggregates() override { return base_->Aggregates(); }

 protected:
  ServerAlgorithm& base() { return *base_; }
  const ServerAlgorithm& base() const { return *base_; }

 private:
  std::unique_ptr<ServerAlgorithm> base_;
};

}  // namespace fgl::fl

#endif  // FGL_FL_FORWARDING_ALGORITHM_H_
