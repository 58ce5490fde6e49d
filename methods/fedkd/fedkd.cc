// FedKD (Wu et al., "Communication-efficient federated learning via knowledge distillation",
// Nature Communications 2022) for FGL (note §A.4). Each client keeps a private mentor of its own
// architecture and a shared mentee, a 2-layer GCN (fl::MutualClient). Each round it:
//   1. loads the server's mentee,
//   2. trains both at once: each model's loss is its CE plus, scaled by 1/(CE_mentor + CE_mentee),
//      the KL of its predictions to the other's and the MSE of its 64-d embedding to the other's,
//   3. replies with the mentee only.
// The server averages the mentees (FedAvg). Each client's mentor is scored. The original's SVD
// compression of the mentee's updates, both ways, is an option (off by default, as the note
// proposes: accuracy is the target).
#include "absl/strings/str_cat.h"
#include "fl/model_average_server.h"
#include "fl/mutual_client.h"
#include "fl/registry.h"
#include "fl/svd_updates.h"
#include "methods/fedkd/fedkd.pb.h"
#include "nn/losses/losses.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedkd {
namespace {

constexpr char kType[] = "fedkd.mentee";

fl::SvdSchedule Schedule(const FedKdParams& p, const fl::MethodConfig& config) {
  return {p.svd_energy_start(), p.svd_energy_end(), config.rounds};
}

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(std::shared_ptr<const fl::ClientData> data,
                                                                 const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedKdParams params, fl::MethodParams<FedKdParams>(config));
  const bool adaptive = params.adaptive();
  const double drop = params.embedding_dropout();
  auto hidden = [drop](const torch::Tensor& z) { return nn::Dropout(z, drop, /*training=*/true); };
  auto losses = [adaptive, hidden](const fl::ClientData& d, const nn::ModelOutput& mentor, const nn::ModelOutput& mentee) {
    const torch::Tensor& mask = d.split.train;
    const torch::Tensor ce_mentor = nn::MaskedCrossEntropy(mentor.logits, d.labels, mask);
    const torch::Tensor ce_mentee = nn::MaskedCrossEntropy(mentee.logits, d.labels, mask);
    const double scale = adaptive ? 1.0 / (ce_mentor.item<double>() + ce_mentee.item<double>()) : 1.0;
    auto distill = [&](const nn::ModelOutput& self, const nn::ModelOutput& other) {
      return scale * (nn::KlDivergence(self.logits, other.logits.detach(), 1.0, mask) +
                      nn::MeanSquaredError(hidden(self.embedding), hidden(other.embedding.detach()), mask));
    };
    return std::make_pair(ce_mentor + distill(mentor, mentee), ce_mentee + distill(mentee, mentor));
  };
  FGL_ASSIGN_OR_RETURN(auto client, fl::MutualClient::Make(std::move(data), config, params.mentee_model(), losses, kType));
  if (client->own_model().embedding_dim() != client->shared_model().embedding_dim()) {
    return absl::InvalidArgumentError(absl::StrCat("fedkd: the mentor's embedding (", client->own_model().embedding_dim(),
                                                   ") and the mentee's (", client->shared_model().embedding_dim(),
                                                   ") must have one width for the hidden-state loss"));
  }
  if (!params.svd_compression()) return std::unique_ptr<fl::ClientAlgorithm>(std::move(client));
  return fl::SvdCompressedClient(std::move(client), Schedule(params, config));
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedKdParams params, fl::MethodParams<FedKdParams>(config));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::ServerAlgorithm> server,
                       fl::MakeModelAverageServer(fl::SharedModelConfig(config, params.mentee_model()), kType));
  if (!params.svd_compression()) return server;
  return fl::SvdCompressedServer(std::move(server), Schedule(params, config));
}

absl::Status Validate(const FedKdParams& p) {
  if (p.mentee_model().empty()) return absl::InvalidArgumentError("FedKdParams.mentee_model is empty");
  if (!(p.svd_energy_start() > 0 && p.svd_energy_start() <= p.svd_energy_end() && p.svd_energy_end() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("FedKdParams: svd_energy_start (", p.svd_energy_start(),
                                                   ") and svd_energy_end (", p.svd_energy_end(),
                                                   ") must satisfy 0 < start <= end <= 1"));
  }
  if (!(p.embedding_dropout() >= 0 && p.embedding_dropout() < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("FedKdParams.embedding_dropout must be in [0, 1), not ", p.embedding_dropout()));
  }
  return absl::OkStatus();
}

}  // namespace

// Version 2: each client's mentor initialised from its own seed (version 1: one seed for all).
FGL_REGISTER_METHOD("fedkd", MakeClient, MakeServer, {fl::TypedParams(&Validate)}, 2);

}  // namespace fgl::methods::fedkd
