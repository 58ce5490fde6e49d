// The round-level trace of a FedGKC federation (methods/testing/federation_trace.h) for the
// differential test against the independent implementation in reference/, plus FedGKC's draws:
// each client's augmented views of each local epoch, as keep masks
// (round<r>/client<k>/views/<epoch>/{weak,strong}_{edge_keep,feature_keep}; edge masks over the
// client's edge_index entries, feature masks over its columns).
//
//   fedgkc_trace --spec='dataset: "csbm:num_nodes=300" clients: 3 method: "fedgkc" rounds: 2'
//                --out=/tmp/trace.npz
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "fl/federation_setup.h"
#include "fl/method_params.h"
#include "graph/augment.h"
#include "graph/random.h"
#include "methods/fedgkc/fedgkc.pb.h"
#include "methods/testing/federation_trace.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "FederationSpec textproto (fl/proto/federation.proto).");
ABSL_FLAG(uint64_t, seed, 2024, "The run's training seed.");
ABSL_FLAG(std::string, out, "", "Where to write the trace (.npz).");

namespace fgl::methods::fedgkc {
namespace {

absl::Status Trace() {
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  FGL_ASSIGN_OR_RETURN(testing::FederationTrace trace,
                       testing::TraceFederation(absl::GetFlag(FLAGS_spec), absl::GetFlag(FLAGS_seed)));
  const fl::FederationOptions& o = trace.options;
  FGL_ASSIGN_OR_RETURN(fl::MethodConfig config, fl::ServerMethodConfig(o, trace.shards.front().num_features,
                                                                       trace.shards.front().num_classes));
  FGL_ASSIGN_OR_RETURN(const FedGkcParams p, fl::MethodParams<FedGkcParams>(config));
  if (p.smkd() && p.self_distillation()) {
    // As FedGkcClient::LocalStep draws them: per local epoch the weak view, then the strong one,
    // each its edges first, then its columns (nn::Augment), from the client's round stream.
    for (int r = 1; r <= o.spec.rounds(); ++r) {
      for (const fl::ClientShard& s : trace.shards) {
        const graph::CsrGraph& g = s.data->data.graph;
        graph::Rng views(fl::ClientRound(fl::ServerRound(o, r), s.data->id).seed, "fedgkc/views");
        for (int e = 0; e < o.spec.local_epochs(); ++e) {
          const std::string prefix = absl::StrCat("round", r, "/client", s.data->id, "/views/", e, "/");
          for (const auto& [name, edge_drop, feature_mask] :
               {std::tuple<const char*, double, double>{"weak", p.weak_edge_drop(), p.weak_feature_mask()},
                {"strong", p.strong_edge_drop(), p.strong_feature_mask()}}) {
            trace.Add(prefix + name + "_edge_keep", edge_drop > 0 ? graph::EdgeKeepMask(g, edge_drop, views)
                                                                  : torch::ones({g.num_entries()}, torch::kBool));
            trace.Add(prefix + name + "_feature_keep",
                      feature_mask > 0 ? graph::FeatureColumnKeepMask(s.num_features, feature_mask, views) > 0.5
                                       : torch::ones({s.num_features}, torch::kBool));
          }
        }
      }
    }
  }
  FGL_RETURN_IF_ERROR(trace.Write(absl::GetFlag(FLAGS_out)));
  std::cout << "trace: " << trace.members.size() << " arrays, " << trace.result.rounds.size()
            << " rounds, final test " << trace.result.test_acc << " -> " << absl::GetFlag(FLAGS_out) << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace fgl::methods::fedgkc

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = fgl::methods::fedgkc::Trace();
  if (!s.ok()) {
    std::cerr << "fedgkc_trace: " << s << "\n";
    return 1;
  }
  return 0;
}
