// The round-level trace (federation_trace.h) of any registered method whose randomness is all in
// what the trace holds (initial states) or switched off (dropout 0): the differential tests of the
// baselines against ports of OpenFGL read it.
//
//   trace --spec='dataset: "csbm:num_nodes=300" clients: 3 method: "fedprox" rounds: 2' --out=t.npz
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "methods/testing/federation_trace.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "FederationSpec textproto (fl/proto/federation.proto).");
ABSL_FLAG(uint64_t, seed, 2024, "The run's training seed.");
ABSL_FLAG(std::string, out, "", "Where to write the trace (.npz).");

namespace fgl::methods::testing {
namespace {

absl::Status Trace() {
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  FGL_ASSIGN_OR_RETURN(FederationTrace trace, TraceFederation(absl::GetFlag(FLAGS_spec), absl::GetFlag(FLAGS_seed)));
  FGL_RETURN_IF_ERROR(trace.Write(absl::GetFlag(FLAGS_out)));
  std::cout << "trace: " << trace.members.size() << " arrays, " << trace.result.rounds.size()
            << " rounds, final test " << trace.result.test_acc << " -> " << absl::GetFlag(FLAGS_out) << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace fgl::methods::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = fgl::methods::testing::Trace();
  if (!s.ok()) {
    std::cerr << "trace: " << s << "\n";
    return 1;
  }
  return 0;
}
