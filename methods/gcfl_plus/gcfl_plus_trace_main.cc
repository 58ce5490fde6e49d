// The round-level trace (methods/testing/federation_trace.h) of a GCFL+ federation, plus the
// server's state after every round, which the generic trace does not hold (it records a state's
// tensors and scalars, and GCFL+'s state is a typed GcflPlusServerState):
//   state<r>/server/cluster<c>/members  int64 [M]: cluster c's client ids, ascending;
//   state<r>/server/cluster<c>/<name>   cluster c's model;
//   state<r>/server/sequence<k>         float64 [L]: client k's gradient norms since the last split
//                                       (absent: the client has not replied yet).
// The states come from the checkpoint the trace reads after each round (its server-state hook).
//
//   gcfl_plus_trace --spec='dataset: "csbm:num_nodes=300" clients: 6 method: "gcfl_plus" rounds: 4 ...' --out=t.npz
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "graph/io/npz_writer.h"
#include "methods/gcfl_plus/gcfl_plus.pb.h"
#include "methods/testing/federation_trace.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "FederationSpec textproto (fl/proto/federation.proto) of a gcfl_plus run.");
ABSL_FLAG(uint64_t, seed, 2024, "The run's training seed.");
ABSL_FLAG(std::string, out, "", "Where to write the trace (.npz).");

namespace fgl::methods::gcfl_plus {
namespace {

using testing::FederationTrace;

absl::Status AddServerState(int round, const GcflPlusServerState& state, FederationTrace* trace) {
  const std::string prefix = absl::StrCat("state", round, "/server/");
  for (int c = 0; c < state.clusters_size(); ++c) {
    const GcflPlusServerState::Cluster& cluster = state.clusters(c);
    const std::string p = absl::StrCat(prefix, "cluster", c, "/");
    trace->Add(p + "members",
               torch::tensor(std::vector<int64_t>(cluster.members().begin(), cluster.members().end()), torch::kInt64));
    for (const fl::proto::Tensor& t : cluster.parameters()) {
      FGL_ASSIGN_OR_RETURN(const torch::Tensor decoded, fl::DecodeTensor(t));
      trace->Add(p + t.name(), decoded);
    }
  }
  for (const GcflPlusServerState::Sequence& s : state.sequences()) {
    const std::vector<double> norms(s.grad_norms().begin(), s.grad_norms().end());
    trace->members.push_back({absl::StrCat(prefix, "sequence", s.client(), ".npy"),
                              graph::io::testing::NpyFromValues<double>({static_cast<int64_t>(norms.size())}, norms)});
  }
  return absl::OkStatus();
}

absl::Status Trace() {
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  auto add_server_state = [](int round, const fl::proto::Message& state, FederationTrace* trace) -> absl::Status {
    if (trace->options.spec.method() != "gcfl_plus") {
      return absl::InvalidArgumentError(
          absl::StrCat("gcfl_plus_trace traces gcfl_plus, not ", trace->options.spec.method()));
    }
    FGL_ASSIGN_OR_RETURN(const GcflPlusServerState typed,
                         fl::UnpackState<GcflPlusServerState>(state, "gcfl_plus trace"));
    return AddServerState(round, typed, trace);
  };
  FGL_ASSIGN_OR_RETURN(FederationTrace trace, testing::TraceFederation(absl::GetFlag(FLAGS_spec),
                                                                       absl::GetFlag(FLAGS_seed), nullptr,
                                                                       add_server_state));
  FGL_RETURN_IF_ERROR(trace.Write(absl::GetFlag(FLAGS_out)));
  std::cout << "gcfl_plus trace: " << trace.members.size() << " arrays, " << trace.result.rounds_size()
            << " rounds, final test " << trace.result.result().test_acc() << " -> " << absl::GetFlag(FLAGS_out) << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace fgl::methods::gcfl_plus

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = fgl::methods::gcfl_plus::Trace();
  if (!s.ok()) {
    std::cerr << "gcfl_plus_trace: " << s << "\n";
    return 1;
  }
  return 0;
}
