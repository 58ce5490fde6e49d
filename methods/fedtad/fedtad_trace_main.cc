// The round-level trace of a FedAvg or FedTAD federation (methods/testing/federation_trace.h) for
// the differential test against the port of the authors' code (reference/), plus FedTAD's draws:
// the server's initial generator (generator/<tensor>) and each round's noise z (round<r>/noise
// [I, B, noise_dim]), so that the port runs on exactly our inputs and draws.
//
//   fedtad_trace --spec='dataset: "csbm:num_nodes=300" clients: 3 method: "fedtad" rounds: 3'
//                --out=/tmp/trace.npz
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "fl/federation_setup.h"
#include "fl/method_params.h"
#include "methods/fedtad/distillation.h"
#include "methods/fedtad/fedtad.pb.h"
#include "methods/testing/federation_trace.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "FederationSpec textproto (fl/proto/federation.proto).");
ABSL_FLAG(uint64_t, seed, 2024, "The run's training seed.");
ABSL_FLAG(std::string, out, "", "Where to write the trace (.npz).");

namespace fgl::methods::fedtad {
namespace {

absl::Status Trace() {
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  FGL_ASSIGN_OR_RETURN(testing::FederationTrace trace,
                       testing::TraceFederation(absl::GetFlag(FLAGS_spec), absl::GetFlag(FLAGS_seed)));
  const fl::FederationOptions& o = trace.options;
  if (o.spec.method() == "fedtad") {  // aggregate 0's draws: FedAvg has one aggregate
    const int64_t num_features = trace.shards.front().num_features, num_classes = trace.shards.front().num_classes;
    FGL_ASSIGN_OR_RETURN(fl::MethodConfig config, fl::ServerMethodConfig(o, num_features, num_classes));
    FGL_ASSIGN_OR_RETURN(const FedTadParams p, fl::MethodParams<FedTadParams>(config));
    ConditionalGenerator generator = InitialGenerator(p.noise_dim(), num_classes, num_features, config.seed);
    for (const auto& item : generator->named_parameters(true)) trace.Add("generator/" + item.key(), item.value());
    for (int r = 1; r <= o.spec.rounds(); ++r) {
      graph::Rng stream = NoiseStream(DistillSeed(fl::ServerRound(o, r).seed, 0));
      std::vector<torch::Tensor> z;
      for (int it = 0; it < p.iterations(); ++it) z.push_back(DrawNoise(stream, p.num_pseudo(), p.noise_dim()));
      if (!z.empty()) trace.Add(absl::StrCat("round", r, "/noise"), torch::stack(z));
    }
  }
  FGL_RETURN_IF_ERROR(trace.Write(absl::GetFlag(FLAGS_out)));
  std::cout << "trace: " << trace.members.size() << " arrays, " << trace.result.rounds.size()
            << " rounds, final test " << trace.result.test_acc << " -> " << absl::GetFlag(FLAGS_out) << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace fgl::methods::fedtad

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = fgl::methods::fedtad::Trace();
  if (!s.ok()) {
    std::cerr << "fedtad_trace: " << s << "\n";
    return 1;
  }
  return 0;
}
