// Bases for plug-ins that wrap another method's client or server ("<base>+fedtad"): every call is
// passed to the base, and every capability accessor returns the base's, so a wrapper has exactly
// its base's capabilities, overrides only what it adds and cannot silently drop a call. A wrapper
// that adds to a capability implements its interface and returns `this` from the accessor. A
// virtual or accessor added to fl/algorithm.h must be forwarded here too
// (forwarding_algorithm_test checks each one).
#ifndef FGL_FL_FORWARDING_ALGORITHM_H_
#define FGL_FL_FORWARDING_ALGORITHM_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fl/algorithm.h"

namespace fgl::fl {

class ForwardingClient : public ClientAlgorithm {
 public:
  explicit ForwardingClient(std::unique_ptr<ClientAlgorithm> base) : base_(std::move(base)) {}

  absl::StatusOr<proto::Message> Train(const proto::Message& from_server, const RoundInfo& round) override {
    return base_->Train(from_server, round);
  }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message* global) override { return base_->Predict(global); }
  absl::StatusOr<proto::Message> SaveState() const override { return base_->SaveState(); }
  absl::Status RestoreState(const proto::Message& state) override { return base_->RestoreState(state); }

  PreparingClient* preparing() override { return base_->preparing(); }
  GraphScoringClient* graph_scoring() override { return base_->graph_scoring(); }
  const ReportingClient* reporting() const override { return base_->reporting(); }

 protected:
  ClientAlgorithm& base() { return *base_; }
  const ClientAlgorithm& base() const { return *base_; }

 private:
  std::unique_ptr<ClientAlgorithm> base_;
};

class ForwardingServer : public ServerAlgorithm {
 public:
  explicit ForwardingServer(std::unique_ptr<ServerAlgorithm> base) : base_(std::move(base)) {}

  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) override { return base_->Broadcast(round); }
  absl::Status Accumulate(const proto::Message& reply) override { return base_->Accumulate(reply); }
  absl::Status FinishRound(const RoundInfo& round) override { return base_->FinishRound(round); }
  absl::StatusOr<proto::Message> SaveState() const override { return base_->SaveState(); }
  absl::Status RestoreState(const proto::Message& state) override { return base_->RestoreState(state); }

  PreparedServer* prepared() override { return base_->prepared(); }
  PersonalisedServer* personalised() override { return base_->personalised(); }
  const MultiExchangeServer* multi_exchange() const override { return base_->multi_exchange(); }
  AggregateSource* aggregate_source() override { return base_->aggregate_source(); }

 protected:
  ServerAlgorithm& base() { return *base_; }
  const ServerAlgorithm& base() const { return *base_; }

 private:
  std::unique_ptr<ServerAlgorithm> base_;
};

}  // namespace fgl::fl

#endif  // FGL_FL_FORWARDING_ALGORITHM_H_
