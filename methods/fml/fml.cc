// FML (Shen et al., "Federated Mutual Learning", FITEE 2023) for FGL (note §A.4). Each client
// keeps a private model of its own architecture and a shared meme model (fl::MutualClient).
// Each round it:
//   1. loads the server's meme model,
//   2. trains both at once by deep mutual learning on its training nodes:
//        private: α·CE + (1 − α)·KL(p_meme ‖ p_private),  meme: β·CE + (1 − β)·KL(p_private ‖ p_meme),
//   3. replies with the meme model only.
// The server averages the meme models (FedAvg, node counts). Each client's private model is scored.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "fl/model_average_server.h"
#include "fl/mutual_client.h"
#include "fl/registry.h"
#include "methods/fml/fml.pb.h"
#include "nn/losses/losses.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fml {
namespace {

constexpr char kType[] = "fml.meme";

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(std::shared_ptr<const fl::ClientData> data,
                                                                 const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FmlParams params, fl::MethodParams<FmlParams>(config));
  const double a = params.private_ce_weight(), b = params.meme_ce_weight();
  auto losses = [a, b](const fl::ClientData& d, const nn::ModelOutput& own, const nn::ModelOutput& meme) {
    const torch::Tensor& mask = d.split.train;
    torch::Tensor own_loss = a * nn::MaskedCrossEntropy(own.logits, d.labels, mask) +
                             (1 - a) * nn::KlDivergence(own.logits, meme.logits.detach(), 1.0, mask);
    torch::Tensor meme_loss = b * nn::MaskedCrossEntropy(meme.logits, d.labels, mask) +
                              (1 - b) * nn::KlDivergence(meme.logits, own.logits.detach(), 1.0, mask);
    return std::make_pair(own_loss, meme_loss);
  };
  FGL_ASSIGN_OR_RETURN(auto client, fl::MutualClient::Make(std::move(data), config, params.meme_model(), losses, kType));
  return std::unique_ptr<fl::ClientAlgorithm>(std::move(client));
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FmlParams params, fl::MethodParams<FmlParams>(config));
  return fl::MakeModelAverageServer(fl::SharedModelConfig(config, params.meme_model()), kType);
}

absl::Status Validate(const FmlParams& p) {
  for (const auto& [name, w] : {std::pair<const char*, double>{"private_ce_weight", p.private_ce_weight()},
                                {"meme_ce_weight", p.meme_ce_weight()}}) {
    if (!(w >= 0 && w <= 1)) return absl::InvalidArgumentError(absl::StrCat("FmlParams.", name, " must be in [0, 1], not ", w));
  }
  if (p.meme_model().empty()) return absl::InvalidArgumentError("FmlParams.meme_model is empty");
  return absl::OkStatus();
}

}  // namespace

// Version 2: each client's private model initialised from its own seed (version 1: one seed for all).
FGL_REGISTER_METHOD("fml", MakeClient, MakeServer, {fl::TypedParams(&Validate)}, 2);

}  // namespace fgl::methods::fml
