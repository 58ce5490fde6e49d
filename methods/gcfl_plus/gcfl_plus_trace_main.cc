// The round-level trace (methods/testing/federation_trace.h) of a GCFL+ federation, plus the
// server's state after every round, which the generic trace does not hold (it records a state's
// tensors and scalars, and GCFL+'s state is a typed GcflPlusServerState):
//   state<r>/server/cluster<c>/members  int64 [M]: cluster c's client ids, ascending;
//   state<r>/server/cluster<c>/<name>   cluster c's model;
//   state<r>/server/sequence<k>         float64 [L]: client k's gradient norms since the last split
//                                       (absent: the client has not replied yet).
// The states are read from the checkpoint after each round of a second, identical run (the
// generic trace keeps its checkpoints to itself); the two runs must end with the same numbers.
//
//   gcfl_plus_trace --spec='dataset: "csbm:num_nodes=300" clients: 6 method: "gcfl_plus" rounds: 4 ...' --out=t.npz
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "fl/checkpoint_file.h"
#include "fl/federation_driver.h"
#include "fl/simulator.h"
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

// Runs the traced federation again with a checkpoint after every round and adds each round's
// server state.
absl::Status AddServerStates(FederationTrace& trace) {
  fl::FederationOptions o = trace.options;
  char scratch[] = "/tmp/fgl_gcfl_plus_trace_XXXXXX";
  if (mkdtemp(scratch) == nullptr) return absl::InternalError("cannot make a scratch directory under /tmp");
  o.checkpoint_dir = scratch;
  o.checkpoint_every = 1;
  absl::Status failed;
  fl::DriverHooks hooks;
  hooks.after_checkpoint = [&](int round) {
    if (!failed.ok()) return;
    absl::StatusOr<std::unique_ptr<fl::CheckpointReader>> reader =
        fl::CheckpointReader::Open(absl::StrCat(scratch, "/checkpoint.pb"));
    if (!reader.ok()) {
      failed = reader.status();
      return;
    }
    absl::StatusOr<GcflPlusServerState> state =
        fl::UnpackState<GcflPlusServerState>((*reader)->header().server(), "gcfl_plus trace");
    failed = state.ok() ? AddServerState(round, *state, &trace) : state.status();
  };
  absl::StatusOr<fl::FederationResult> result = fl::RunFederation(o, hooks);
  std::filesystem::remove_all(scratch);
  FGL_RETURN_IF_ERROR(result.status());
  FGL_RETURN_IF_ERROR(failed);
  if (result->test_acc != trace.result.test_acc || result->rounds.size() != trace.result.rounds.size()) {
    return absl::InternalError(absl::StrCat("the second run ended with test accuracy ", result->test_acc,
                                            " after ", result->rounds.size(), " rounds, the traced one with ",
                                            trace.result.test_acc, " after ", trace.result.rounds.size()));
  }
  return absl::OkStatus();
}

absl::Status Trace() {
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  FGL_ASSIGN_OR_RETURN(FederationTrace trace,
                       testing::TraceFederation(absl::GetFlag(FLAGS_spec), absl::GetFlag(FLAGS_seed)));
  if (trace.options.spec.method() != "gcfl_plus") {
    return absl::InvalidArgumentError(
        absl::StrCat("gcfl_plus_trace traces gcfl_plus, not ", trace.options.spec.method()));
  }
  FGL_RETURN_IF_ERROR(AddServerStates(trace));
  FGL_RETURN_IF_ERROR(trace.Write(absl::GetFlag(FLAGS_out)));
  std::cout << "gcfl_plus trace: " << trace.members.size() << " arrays, " << trace.result.rounds.size()
            << " rounds, final test " << trace.result.test_acc << " -> " << absl::GetFlag(FLAGS_out) << "\n";
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
