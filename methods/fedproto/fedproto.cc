// FedProto (Tan et al., AAAI 2022) for FGL (note §A.4). Each round, every client
// (fl::PrototypeClient):
//   1. reads the global class prototypes (none in round 1: cross-entropy only),
//   2. trains its own model, of any architecture, for E epochs on
//      CE + λ·Σ_c MSE(embeddings of its class-c training nodes, global prototype c),
//   3. replies with its local prototypes: the mean eval-mode embedding of its training nodes per
//      class, and their counts. No model parameter leaves the client.
// The server averages the prototypes per class (fl::CountWeightedPrototypes). Each client's own
// model is scored.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "fl/aggregate/prototypes.h"
#include "fl/prototype_client.h"
#include "fl/registry.h"
#include "methods/fedproto/fedproto.pb.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedproto {
namespace {

constexpr char kType[] = "fedproto.prototypes";

class FedProtoServer final : public fl::ServerAlgorithm {
 public:
  explicit FedProtoServer(const fl::MethodConfig& config, FedProtoParams params)
      : config_(config), params_(std::move(params)) {}

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    return fl::PrototypeMessage(global_, round.round, kType);
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    const int64_t dim = prototypes_.empty() ? 0 : prototypes_[0].size(1);
    FGL_ASSIGN_OR_RETURN(nn::ClassPrototypes local, fl::ReadLocalPrototypes(reply, config_.num_classes, dim, "fedproto"));
    auto n = reply.scalars().find("num_nodes");
    prototypes_.push_back(local.prototypes);
    counts_.push_back(local.counts);
    sizes_.push_back(n == reply.scalars().end() ? 1.0 : n->second);
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo&) override {
    if (!prototypes_.empty()) {
      global_ = params_.aggregation() == FedProtoParams::OPENFGL_CLIENT_SIZE
                    ? fl::ClientSizeWeightedPrototypes(prototypes_, sizes_)
                    : fl::CountWeightedPrototypes(prototypes_, counts_);
    }
    prototypes_.clear();
    counts_.clear();
    sizes_.clear();
    return absl::OkStatus();
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override { return fl::PrototypeMessage(global_, 0, kType); }

  absl::Status RestoreState(const fl::proto::Message& state) override {
    FGL_ASSIGN_OR_RETURN(global_, fl::ReadGlobalPrototypes(state));
    return absl::OkStatus();
  }

 private:
  fl::MethodConfig config_;
  FedProtoParams params_;
  fl::GlobalPrototypes global_;
  std::vector<torch::Tensor> prototypes_, counts_;
  std::vector<double> sizes_;
};

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(std::shared_ptr<const fl::ClientData> data,
                                                                 const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedProtoParams params, fl::MethodParams<FedProtoParams>(config));
  return fl::PrototypeClient::Make(std::move(data), config, params.proto_weight(), kType, params.embedding_dropout());
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedProtoParams params, fl::MethodParams<FedProtoParams>(config));
  return std::unique_ptr<fl::ServerAlgorithm>(new FedProtoServer(config, std::move(params)));
}

}  // namespace

// Version 2: each client's model initialised from its own seed (version 1: one seed for all).
FGL_REGISTER_METHOD("fedproto", MakeClient, MakeServer, {fl::TypedParams<FedProtoParams>()}, 2);

}  // namespace fgl::methods::fedproto
