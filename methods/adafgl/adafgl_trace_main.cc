// The round-level trace (methods/testing/federation_trace.h) of an AdaFGL federation, plus what
// the differential test against OpenFGL's code (reference/adafgl_differential_test.py) needs from
// step 2, re-drawn or recomputed with the functions the clients use (personalisation.h):
//   adafgl/client<k>/lp_order       int64 [T]: the training nodes in label-propagation order;
//   adafgl/client<k>/reliability    float64 []: the homophily reliability from that order;
//   adafgl/client<k>/init/<name>    the personalised modules before their first step;
//   state<r>/client<k>/adafgl/predict  [N, C]: from round V + 1 on, what the client scores (the
//                                   reliability-merged prediction of its state after round r).
// The test fails if these drift from what the clients compute.
//
//   adafgl_trace --spec='dataset: "csbm:num_nodes=300" clients: 3 method: "adafgl" rounds: 4 ...' --out=t.npz
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fl/method_params.h"
#include "fl/registry.h"
#include "fl/run_setup.h"
#include "graph/io/npz_writer.h"
#include "methods/adafgl/adafgl.pb.h"
#include "methods/adafgl/personalisation.h"
#include "methods/testing/federation_trace.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "FederationSpec textproto (fl/proto/federation.proto) of an adafgl run.");
ABSL_FLAG(uint64_t, seed, 2024, "The run's training seed.");
ABSL_FLAG(std::string, out, "", "Where to write the trace (.npz).");

namespace fgl::methods::adafgl {
namespace {

using testing::FederationTrace;

// Client `client`'s method config, as the run builds it.
absl::StatusOr<fl::MethodConfig> ClientConfig(const FederationTrace& trace, int client) {
  const fl::ClientShard& s = trace.shards.front();
  FGL_ASSIGN_OR_RETURN(const fl::MethodConfig server,
                       fl::ServerMethodConfig(trace.options, s.num_features, s.num_classes));
  return fl::ClientMethodConfig(trace.options, server, client);
}

// A personalised client's state: a fresh client restored from it scores what the run's client
// scored after that round (the fixed inputs are recomputed from the saved extractor on restore).
absl::Status AddPrediction(int round, int k, const fl::proto::Message& state, FederationTrace* trace) {
  bool personalised = false;
  for (const auto& t : state.tensors()) personalised |= absl::StartsWith(t.name(), "adafgl.");
  if (!personalised) return absl::OkStatus();
  FGL_ASSIGN_OR_RETURN(const fl::MethodFactories factories, fl::FindMethod("adafgl"));
  FGL_ASSIGN_OR_RETURN(const fl::MethodConfig config, ClientConfig(*trace, k));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::ClientAlgorithm> client, factories.client(trace->shards[k].data, config));
  FGL_RETURN_IF_ERROR(client->RestoreState(state));
  FGL_ASSIGN_OR_RETURN(const torch::Tensor predicted, client->Predict(nullptr));
  trace->Add(absl::StrCat("state", round, "/client", k, "/adafgl/predict"), predicted);
  return absl::OkStatus();
}

// Each client's step-2 draws and its reliability, as AdaFglClient::Personalise computes them.
absl::Status AddDraws(FederationTrace& trace) {
  for (const fl::ClientShard& s : trace.shards) {
    const fl::ClientData& c = *s.data;
    FGL_ASSIGN_OR_RETURN(const fl::MethodConfig config, ClientConfig(trace, c.id));
    FGL_ASSIGN_OR_RETURN(const AdaFglParams params, fl::MethodParams<AdaFglParams>(config));
    const std::string p = absl::StrCat("adafgl/client", c.id, "/");
    const torch::Tensor order =
        torch::tensor(LabelPropagationOrder(c.split.train, config.seed, c.id), torch::kInt64);
    trace.Add(p + "lp_order", order);
    const torch::Tensor unlabelled = c.split.val.to(torch::kCPU).logical_or(c.split.test.to(torch::kCPU));
    const double reliability = PropagationReliability(DenseAdjacency(c.data.graph), c.labels.to(torch::kCPU),
                                                      config.num_classes, order, unlabelled, params);
    trace.members.push_back({p + "reliability.npy", graph::io::testing::NpyFromValues<double>({}, {reliability})});
    const int64_t features = c.data.features.size(1);
    PersonalisedModules modules(features, features * (params.prop_steps() + 1), config.num_classes, params,
                                ModuleInitSeed(config.seed, c.id));
    for (const auto& item : modules.named_parameters(true)) trace.Add(p + "init/" + item.key(), item.value());
  }
  return absl::OkStatus();
}

absl::Status Trace() {
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  FGL_ASSIGN_OR_RETURN(FederationTrace trace,
                       testing::TraceFederation(absl::GetFlag(FLAGS_spec), absl::GetFlag(FLAGS_seed), AddPrediction));
  if (trace.options.spec.method() != "adafgl") {
    return absl::InvalidArgumentError(absl::StrCat("adafgl_trace traces adafgl, not ", trace.options.spec.method()));
  }
  FGL_RETURN_IF_ERROR(AddDraws(trace));
  FGL_RETURN_IF_ERROR(trace.Write(absl::GetFlag(FLAGS_out)));
  std::cout << "adafgl trace: " << trace.members.size() << " arrays, " << trace.result.rounds_size()
            << " rounds, final test " << trace.result.result().test_acc() << " -> " << absl::GetFlag(FLAGS_out) << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace fgl::methods::adafgl

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = fgl::methods::adafgl::Trace();
  if (!s.ok()) {
    std::cerr << "adafgl_trace: " << s << "\n";
    return 1;
  }
  return 0;
}
