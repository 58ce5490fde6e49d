// The round-level trace of a FED-PUB federation (methods/testing/federation_trace.h) plus the proxy
// graph the clients rebuild from the broadcast's seed (proxy/{x,edge_index}), so that the port of
// the authors' code (reference/) embeds on the same graph.
//
//   fedpub_trace --spec='dataset: "csbm:num_nodes=300" clients: 3 method: "fedpub" rounds: 2
//                model: "gcn:layers=3,hidden=64,jk=last,masked=true,dropout=0"' --out=/tmp/trace.npz
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "methods/fedpub/proxy_graph.h"
#include "methods/testing/federation_trace.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "FederationSpec textproto (fl/proto/federation.proto).");
ABSL_FLAG(uint64_t, seed, 2024, "The run's training seed.");
ABSL_FLAG(std::string, out, "", "Where to write the trace (.npz).");

namespace fgl::methods::fedpub {
namespace {

absl::Status Trace() {
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  FGL_ASSIGN_OR_RETURN(testing::FederationTrace trace,
                       testing::TraceFederation(absl::GetFlag(FLAGS_spec), absl::GetFlag(FLAGS_seed)));
  auto seed = trace.scalars.find("round1/broadcast/scalar/proxy_seed");
  if (seed == trace.scalars.end()) return absl::InvalidArgumentError("the trace has no round-1 proxy_seed: not a fedpub run?");
  const double proxy_seed = seed->second;
  FGL_ASSIGN_OR_RETURN(ProxyGraph proxy,
                       MakeProxyGraph(trace.shards.front().num_features, static_cast<uint64_t>(proxy_seed)));
  const graph::CsrGraph& g = proxy.graph;
  const torch::Tensor source = torch::repeat_interleave(torch::arange(g.num_nodes()), g.row_ptr().diff());
  trace.Add("proxy/edge_index", torch::stack({source, g.col()}));
  trace.Add("proxy/x", proxy.features);
  FGL_RETURN_IF_ERROR(trace.Write(absl::GetFlag(FLAGS_out)));
  std::cout << "trace: " << trace.members.size() << " arrays, " << trace.result.rounds.size()
            << " rounds, final test " << trace.result.test_acc << " -> " << absl::GetFlag(FLAGS_out) << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace fgl::methods::fedpub

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = fgl::methods::fedpub::Trace();
  if (!s.ok()) {
    std::cerr << "fedpub_trace: " << s << "\n";
    return 1;
  }
  return 0;
}
