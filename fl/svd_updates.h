// FedKD's communication compression (Wu et al., Nature Communications 2022): a model update, the
// new tensors minus the ones both sides already hold, travels as truncated SVD factors that keep
// a share `energy` of each matrix's squared singular values; vectors, and matrices the factors
// would not shrink, travel whole. The decorators apply it to any method's messages, both ways.
#ifndef FGL_FL_SVD_UPDATES_H_
#define FGL_FL_SVD_UPDATES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/proto/message.pb.h"
#include "fl/tensor_codec.h"

namespace fgl::fl {

// The energy threshold of round `round` of `rounds`: start + (end - start) * round / rounds.
struct SvdSchedule {
  double start = 0.95, end = 0.98;
  int rounds = 1;
  double Energy(int round) const;
};

// Appends `now - held` (same names and shapes, CHECKed: the caller matched them) to `out`: per
// tensor "<name>#u" [m, k] and "<name>#sv" [k, n] (singular values folded into the right factor)
// for a matrix whose k(m + n) < mn, else "<name>#delta".
void AddSvdUpdate(const NamedTensors& now, const NamedTensors& held, double energy, proto::Message* out);

// held + the update in `message`, per tensor of `held`; InvalidArgument naming `who` and the tensor
// when one is missing, misshapen or not finite.
absl::StatusOr<NamedTensors> ApplySvdUpdate(const proto::Message& message, const NamedTensors& held,
                                            const std::string& who);

// The client reconstructs the server's model from the update it receives (the first message is
// whole), hands the inner client that model and sends its reply as an update against it.
std::unique_ptr<ClientAlgorithm> SvdCompressedClient(std::unique_ptr<ClientAlgorithm> inner, SvdSchedule schedule);
// The server broadcasts its model as an update against what the clients hold (whole the first
// time) and rebuilds each reply before the inner server sees it.
std::unique_ptr<ServerAlgorithm> SvdCompressedServer(std::unique_ptr<ServerAlgorithm> inner, SvdSchedule schedule);

}  // namespace fgl::fl

#endif  // FGL_FL_SVD_UPDATES_H_
