// D-FedGNN (Pei et al. 2021), as FedEgo's baselines run it (seeds_fedego.md §9.5): decentralised
// training on a ring of N clients, each from its own initialisation. Each round, every client
//   1. loads its ring average w_i <- (w_{i-1} + w_i + w_{i+1}) / 3 (indices mod N; none before
//      the first averaging),
//   2. runs E local epochs of Adam on its training nodes,
//   3. passes its weights to its two ring neighbours.
// No global model exists: the server only stands in for the peer-to-peer links. Evaluation
// 'personalized' scores each client's ring average, as the code evaluates after the averaging.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/aggregate/weighted_mean.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "graph/random.h"
#include "methods/d_fedgnn/d_fedgnn.pb.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::d_fedgnn {
namespace {

constexpr char kType[] = "d_fedgnn.weights";

class DFedGnnClient final : public fl::ModelClient {
 public:
  using ModelClient::ModelClient;

  // Each client initialises its own model, as the code's peers do.
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(auto model, fl::LocalModel::Create(data, config,
                                                            graph::Rng::Derive(config.seed, absl::StrCat("client/", data->id))));
    return std::unique_ptr<fl::ClientAlgorithm>(new DFedGnnClient(std::move(data), config, std::move(model)));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& ring_average,
                                           const fl::RoundInfo& round) override {
    // Round 1 carries no weights: every client trains from its own initialisation first.
    if (ring_average.tensors_size() > 0) FGL_RETURN_IF_ERROR(fl::LoadTensors(ring_average, model_->SharedParameters()));
    return TrainAndReply(round, kType);
  }
};

class DFedGnnServer final : public fl::ServerAlgorithm, public fl::PersonalisedServer {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Make(const fl::MethodConfig& config) {
    // A model of the clients' architecture: the names and shapes replies must have.
    if (config.spec.clients() < 1) return absl::InvalidArgumentError("d_fedgnn: the ring needs at least one client");
    FGL_ASSIGN_OR_RETURN(auto init, fl::ModelAverageServer::Create(config, kType));
    fl::NamedTensors like;
    for (const auto& [name, t] : init->GlobalParameters()) like.emplace_back(name, t.detach().clone());
    return std::unique_ptr<fl::ServerAlgorithm>(new DFedGnnServer(config.spec.clients(), std::move(like)));
  }

  fl::PersonalisedServer* personalised() override { return this; }
  absl::StatusOr<fl::proto::Message> BroadcastTo(int client, const fl::RoundInfo& round) override {
    if (client < 0 || client >= n_) return absl::InvalidArgumentError(absl::StrCat("no client ", client));
    return fl::ServerMessage(Named(ring_[client]), round, kType);  // empty before the first averaging
  }
  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo&) override {
    return absl::FailedPreconditionError(
        "d_fedgnn has no global model: evaluate with eval.model PERSONALIZED (each client's ring average) or LOCAL");
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    const int k = reply.header().sender();
    if (reply.header().type() != kType) {
      return absl::InvalidArgumentError(absl::StrCat("expected a '", kType, "' reply, got '", reply.header().type(), "'"));
    }
    if (k < 0 || k >= n_) return absl::InvalidArgumentError(absl::StrCat("reply from unknown client ", k));
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
    FGL_RETURN_IF_ERROR(CheckLike(tensors, absl::StrCat("reply from client ", k)));
    latest_[k] = std::move(tensors);
    return absl::OkStatus();
  }

  // Each client's ring average over the latest weights of itself and its neighbours (a client
  // that has sent nothing yet is left out; with nobody to average the ring average is kept).
  // Positions are not deduplicated, as the code: with N = 2 the other client counts twice.
  absl::Status FinishRound(const fl::RoundInfo&) override {
    std::vector<std::map<std::string, torch::Tensor>> next = ring_;
    for (int k = 0; k < n_; ++k) {
      fl::WeightedMean mean;
      for (int j : {(k + n_ - 1) % n_, k, (k + 1) % n_}) {
        auto it = latest_.find(j);
        if (it != latest_.end()) FGL_RETURN_IF_ERROR(mean.Accumulate(it->second, 1.0));
      }
      if (mean.CanReport()) {
        FGL_ASSIGN_OR_RETURN(next[k], std::move(mean).Report());
      }
    }
    ring_ = std::move(next);
    return absl::OkStatus();
  }

  // Every client's ring average and latest weights as DFedGnnServerState.
  absl::StatusOr<fl::proto::Message> SaveState() const override {
    DFedGnnServerState state;
    auto add = [](int k, const std::map<std::string, torch::Tensor>& tensors, DFedGnnServerState::ClientModel* m) {
      m->set_client(k);
      for (const auto& [name, t] : tensors) *m->add_parameters() = fl::EncodeTensor(name, t);
    };
    for (int k = 0; k < n_; ++k) {
      if (!ring_[k].empty()) add(k, ring_[k], state.add_ring());
    }
    for (const auto& [k, tensors] : latest_) add(k, tensors, state.add_latest());  // a std::map: ascending
    fl::proto::Message m;
    m.mutable_header()->set_type("d_fedgnn.state");
    fl::PackState(state, &m);
    return m;
  }
  // Everything is checked before anything changes, so a refused state leaves the server as it was.
  absl::Status RestoreState(const fl::proto::Message& message) override {
    FGL_ASSIGN_OR_RETURN(const DFedGnnServerState state,
                         fl::UnpackState<DFedGnnServerState>(message, "d_fedgnn state"));
    std::vector<std::map<std::string, torch::Tensor>> ring(n_);
    for (const DFedGnnServerState::ClientModel& m : state.ring()) {
      FGL_ASSIGN_OR_RETURN(const int k, CheckClient(m, "ring"));
      if (!ring[k].empty()) {
        return absl::InvalidArgumentError(absl::StrCat("d_fedgnn state: ring of client ", k, ": listed twice"));
      }
      FGL_ASSIGN_OR_RETURN(ring[k], DecodeModel(m, "ring"));
    }
    std::map<int, std::map<std::string, torch::Tensor>> latest;
    for (const DFedGnnServerState::ClientModel& m : state.latest()) {
      FGL_ASSIGN_OR_RETURN(const int k, CheckClient(m, "latest"));
      if (latest.count(k)) {
        return absl::InvalidArgumentError(absl::StrCat("d_fedgnn state: latest of client ", k, ": listed twice"));
      }
      FGL_ASSIGN_OR_RETURN(latest[k], DecodeModel(m, "latest"));
    }
    ring_ = std::move(ring);
    latest_ = std::move(latest);
    return absl::OkStatus();
  }

 private:
  DFedGnnServer(int n, fl::NamedTensors like) : n_(n), like_(std::move(like)), ring_(n) {}

  static fl::NamedTensors Named(const std::map<std::string, torch::Tensor>& tensors) {
    return fl::NamedTensors(tensors.begin(), tensors.end());
  }
  // The model's own tensors, with its shapes, finite, and nothing else.
  absl::Status CheckLike(const std::map<std::string, torch::Tensor>& tensors, const std::string& what) const {
    if (tensors.size() != like_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has ", tensors.size(), " tensors, expected ", like_.size()));
    }
    return fl::MatchTensors(tensors, like_, what).status();
  }
  // A saved model's client id, in the ring.
  absl::StatusOr<int> CheckClient(const DFedGnnServerState::ClientModel& m, const std::string& field) const {
    if (!m.has_client() || m.client() < 0 || m.client() >= n_) {
      return absl::InvalidArgumentError(absl::StrCat("d_fedgnn state: ", field, " of client ",
                                                     m.has_client() ? absl::StrCat(m.client()) : "(none)",
                                                     ": not a client of the ring [0, ", n_, ")"));
    }
    return m.client();
  }
  // A saved model: exactly the model's tensors, with its shapes and dtypes, finite.
  absl::StatusOr<std::map<std::string, torch::Tensor>> DecodeModel(const DFedGnnServerState::ClientModel& m,
                                                                   const std::string& field) const {
    const std::string who = absl::StrCat("d_fedgnn state: ", field, " of client ", m.client());
    std::map<std::string, torch::Tensor> tensors;
    for (const fl::proto::Tensor& t : m.parameters()) {
      absl::StatusOr<torch::Tensor> d = fl::DecodeTensor(t);
      if (!d.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": tensor '", t.name(), "': ", d.status().message()));
      }
      if (!tensors.emplace(t.name(), *std::move(d)).second) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": tensor '", t.name(), "' listed twice"));
      }
    }
    FGL_RETURN_IF_ERROR(CheckLike(tensors, who));
    for (const auto& [name, t] : like_) {
      if (tensors.at(name).scalar_type() != t.scalar_type()) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": tensor '", name, "' is ",
                                                       c10::toString(tensors.at(name).scalar_type()), ", expected ",
                                                       c10::toString(t.scalar_type())));
      }
    }
    return tensors;
  }

  int n_;
  fl::NamedTensors like_;  // the names and shapes of the model
  std::vector<std::map<std::string, torch::Tensor>> ring_;  // what client k loads next (empty: none yet)
  std::map<int, std::map<std::string, torch::Tensor>> latest_;
};

}  // namespace

FGL_REGISTER_METHOD("d_fedgnn", DFedGnnClient::Make, DFedGnnServer::Make, {}, 2);

}  // namespace fgl::methods::d_fedgnn
