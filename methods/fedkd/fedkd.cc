// FedKD (Wu et al., "Communication-efficient federated learning via knowledge distillation",
// Nature Communications 2022) for FGL (note §A.4). Each client keeps a private mentor of its own
// architecture and a shared mentee, a 2-layer GCN (fl::MutualClient). Each round it:
//   1. loads the server's mentee,
//   2. trains both at once: each model's loss is its CE plus, scaled by 1/(CE_mentor + CE_mentee),
//      the KL of its predictions to the other's and the MSE of its 64-d embedding to the other's,
//   3. replies with the mentee only.
// The server averages the mentees (FedAvg). Each client's mentor is scored. The original's SVD
// compression of the mentee's updates, both ways, is an option (off by default, as the note
// proposes: accuracy is the target). FedKdParams 7-8 select the authors' loss and plain mean
// (fedkd.proto).
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "fl/forwarding_algorithm.h"
#include "fl/model_average_server.h"
#include "fl/mutual_client.h"
#include "fl/proto/client_weighting.pb.h"
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
  return {p.svd_energy_start(), p.svd_energy_end(), config.spec.rounds()};
}

// The authors' loss [model_bert.py:512-531] as fl::MutualClient's pair: the mentor's part
// CE_t + KL_t/S + MSE/S and the mentee's CE_s + KL_s/S + MSE/S, S = CE_t + CE_s, with nothing
// detached. fl::LocalModel::TrainMutually takes one backward pass of their sum, which is the
// authors' one backward of their total [run.py:158-165], so every term reaches both models as
// there. KLDivLoss()'s 'mean' is our 'batchmean' KL over the number of classes.
std::pair<torch::Tensor, torch::Tensor> AuthorsLosses(const fl::ClientData& d, const nn::ModelOutput& mentor,
                                                      const nn::ModelOutput& mentee) {
  const torch::Tensor& mask = d.split.train;
  const double classes = static_cast<double>(mentor.logits.size(1));
  const torch::Tensor mse = nn::MeanSquaredError(mentee.embedding, mentor.embedding, mask);
  const torch::Tensor ce_mentor = nn::MaskedCrossEntropy(mentor.logits, d.labels, mask);
  const torch::Tensor ce_mentee = nn::MaskedCrossEntropy(mentee.logits, d.labels, mask);
  const torch::Tensor s = ce_mentor + ce_mentee;
  const torch::Tensor kl_mentor = nn::KlDivergence(mentor.logits, mentee.logits, 1.0, mask) / classes;
  const torch::Tensor kl_mentee = nn::KlDivergence(mentee.logits, mentor.logits, 1.0, mask) / classes;
  return {ce_mentor + kl_mentor / s + mse / s, ce_mentee + kl_mentee / s + mse / s};
}

// The reply with the weight the server's plain mean reads (weighting UNIFORM).
class UniformWeightClient final : public fl::ForwardingClient {
 public:
  using fl::ForwardingClient::ForwardingClient;
  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, base().Train(global, round));
    fl::AddWeight(fl::proto::UNIFORM, &reply);
    return reply;
  }
};

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
  fl::MutualClient::Losses chosen = losses;
  if (params.loss() == FedKdParams::AUTHORS_CODE) {
    chosen = [hidden](const fl::ClientData& d, const nn::ModelOutput& mentor, const nn::ModelOutput& mentee) {
      nn::ModelOutput t = mentor, s = mentee;
      t.embedding = hidden(t.embedding);
      s.embedding = hidden(s.embedding);
      return AuthorsLosses(d, t, s);
    };
  }
  FGL_ASSIGN_OR_RETURN(auto client, fl::MutualClient::Make(std::move(data), config, params.mentee_model(), chosen, kType));
  if (client->own_model().embedding_dim() != client->shared_model().embedding_dim()) {
    return absl::InvalidArgumentError(absl::StrCat("fedkd: the mentor's embedding (", client->own_model().embedding_dim(),
                                                   ") and the mentee's (", client->shared_model().embedding_dim(),
                                                   ") must have one width for the hidden-state loss"));
  }
  std::unique_ptr<fl::ClientAlgorithm> out = std::move(client);
  if (params.weighting() == fl::proto::UNIFORM) out = std::make_unique<UniformWeightClient>(std::move(out));
  if (!params.svd_compression()) return out;
  return fl::SvdCompressedClient(std::move(out), Schedule(params, config));
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedKdParams params, fl::MethodParams<FedKdParams>(config));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::ServerAlgorithm> server,
                       fl::MakeModelAverageServer(fl::SharedModelConfig(config, params.mentee_model()), kType,
                                                  {fl::WeightScalar(params.weighting())}));
  if (!params.svd_compression()) return server;
  return fl::SvdCompressedServer(std::move(server), Schedule(params, config));
}

// The ranges are declared on FedKdParams' fields; the energy schedule must also not fall.
absl::Status Validate(const FedKdParams& p) {
  if (p.mentee_model().empty()) return absl::InvalidArgumentError("FedKdParams.mentee_model is empty");
  if (!(p.svd_energy_start() <= p.svd_energy_end())) {
    return absl::InvalidArgumentError(absl::StrCat("FedKdParams: svd_energy_start (", p.svd_energy_start(),
                                                   ") and svd_energy_end (", p.svd_energy_end(),
                                                   ") must satisfy 0 < start <= end <= 1"));
  }
  if (p.loss() == FedKdParams::AUTHORS_CODE && !p.adaptive()) {
    return absl::InvalidArgumentError("FedKdParams: loss AUTHORS_CODE is adaptive by construction; adaptive: false is refused");
  }
  return absl::OkStatus();
}

}  // namespace

// Version 2: each client's mentor initialised from its own seed (version 1: one seed for all).
FGL_REGISTER_METHOD("fedkd", MakeClient, MakeServer, {fl::TypedParams<FedKdParams>(&Validate)}, 2);

}  // namespace fgl::methods::fedkd
