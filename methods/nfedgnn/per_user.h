// nFedGNN with one user per fl client, for serve/join across processes: the same arithmetic as
// the batched runner (fl/node_level/federation.h), exchanged as real messages. The batched runner
// runs the tables; this deployment shows that the split holds on the wire.
#ifndef FGL_METHODS_NFEDGNN_PER_USER_H_
#define FGL_METHODS_NFEDGNN_PER_USER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"

namespace fgl::methods::nfedgnn {

// Driver round r: each user applies the gradient of split round r − 1 and uploads its latent;
// the server first scores the model after split round r − 1 on those latents (the logits it
// broadcasts for evaluation), then takes split round r's step. So round r's record scores split
// round r − 1, and a run of R + 1 rounds (the last only scores) equals a batched run of R rounds.
absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakePerUserClient(std::shared_ptr<const fl::ClientData> data,
                                                                        const fl::MethodConfig& config);
absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakePerUserServer(const fl::MethodConfig& config);

}  // namespace fgl::methods::nfedgnn

#endif  // FGL_METHODS_NFEDGNN_PER_USER_H_
