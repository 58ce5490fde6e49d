// The round-level trace (federation_trace.h) of any registered method whose randomness is in what
// the trace holds (initial states, augmented views, the draws below) or switched off (dropout 0):
// the differential tests against the reference ports read it. A method that draws augmented views
// names its stream and rates, in the order it draws them each local epoch (the test sets the same
// rates). A batched node-level method (nfedgnn, cnfgnn) is traced through its runtime's
// RoundTracer, with its dropout masks (federation_trace.h). FedTAD's server draws, FED-PUB's proxy
// graph and FedEgo's ego-trees are added by method name:
//   fedtad: generator/<tensor> (the initial generator), round<r>/noise [I, B, noise_dim];
//   fedpub: proxy/{x,edge_index} (the graph the clients rebuild from the broadcast's seed);
//   fedego (dropout 0 only): round<r>/client<k>/fedego/epoch<e>/batch<b> [B, S] (a local batch's
//     ego-trees, centres in column 0, in training order), round<r>/client<k>/fedego/mash [U, S]
//     (the mashed chunks' trees, in chunk order), round<r>/server/fedego/epoch<e>/batch<b>/graphs
//     [B] (mashed graphs, by index in the clients' concatenation) and .../positions [B, S] (with
//     server_tree RESAMPLE: the source position each position of the server's tree reads).
//
//   trace --spec='dataset: "csbm:num_nodes=300" clients: 3 method: "fedprox" rounds: 2' --out=t.npz
//   trace --spec='... method: "fgssl" ...' --view_stream=fgssl/views --views=weak:0.3:0.3,strong:0.8:0.5
//   trace --spec='dataset: "csbm:num_nodes=40" partitioner: "node_level" clients: 40 method: "nfedgnn" ...'
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fl/federated_data.h"
#include "fl/local_model.h"
#include "fl/method_params.h"
#include "fl/round_schedule.h"
#include "fl/run_setup.h"
#include "graph/ego_graph.h"
#include "graph/random.h"
#include "methods/fedego/fedego.pb.h"
#include "methods/fedpub/proxy_graph.h"
#include "methods/fedtad/distillation.h"
#include "methods/fedtad/fedtad.pb.h"
#include "methods/testing/federation_trace.h"
#include "nn/models/ego_sage.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "FederationSpec textproto (fl/proto/federation.proto).");
ABSL_FLAG(uint64_t, seed, 2024, "The run's training seed.");
ABSL_FLAG(std::string, out, "", "Where to write the trace (.npz).");
ABSL_FLAG(std::string, view_stream, "", "The clients' stream of augmented views, e.g. fgssl/views.");
ABSL_FLAG(std::vector<std::string>, views, {},
          "NAME:EDGE_DROP:FEATURE_MASK of each view a client draws per local epoch, in order.");

namespace fgl::methods::testing {
namespace {

// FedTAD's server draws for aggregate 0 (FedAvg has one), from the distiller's own functions.
absl::Status AddFedTadDraws(FederationTrace& trace) {
  const fl::FederationOptions& o = trace.options;
  const int64_t num_features = trace.shards.front().num_features, num_classes = trace.shards.front().num_classes;
  FGL_ASSIGN_OR_RETURN(fl::MethodConfig config, fl::ServerMethodConfig(o, num_features, num_classes));
  FGL_ASSIGN_OR_RETURN(const fedtad::FedTadParams p, fl::MethodParams<fedtad::FedTadParams>(config));
  fedtad::ConditionalGenerator generator =
      fedtad::InitialGenerator(p.noise_dim(), num_classes, num_features, config.seed);
  for (const auto& item : generator->named_parameters(true)) trace.Add("generator/" + item.key(), item.value());
  for (int r = 1; r <= o.spec.rounds(); ++r) {
    graph::Rng stream = fedtad::NoiseStream(fedtad::DistillSeed(fl::ServerRound(o, r).seed, 0));
    std::vector<torch::Tensor> z;
    for (int it = 0; it < p.iterations(); ++it) z.push_back(fedtad::DrawNoise(stream, p.num_pseudo(), p.noise_dim()));
    if (!z.empty()) trace.Add(absl::StrCat("round", r, "/noise"), torch::stack(z));
  }
  return absl::OkStatus();
}

// FED-PUB's proxy graph, rebuilt from the seed in round 1's broadcast as the clients rebuild it.
absl::Status AddFedPubProxy(FederationTrace& trace) {
  auto seed = trace.scalars.find("round1/broadcast/scalar/proxy_seed");
  if (seed == trace.scalars.end()) return absl::InvalidArgumentError("the trace has no round-1 proxy_seed");
  FGL_ASSIGN_OR_RETURN(fedpub::ProxyGraph proxy, fedpub::MakeProxyGraph(trace.shards.front().num_features,
                                                                        static_cast<uint64_t>(seed->second)));
  const graph::CsrGraph& g = proxy.graph;
  trace.Add("proxy/edge_index",
            torch::stack({torch::repeat_interleave(torch::arange(g.num_nodes()), g.row_ptr().diff()), g.col()}));
  trace.Add("proxy/x", proxy.features);
  return absl::OkStatus();
}

// FedEgo's ego-trees and server draws, re-drawn as the run draws them: the local batches as
// fl::LocalModel::TrainMiniBatches and nn::EgoSage::forward_centres do (the trees come from the
// training stream that dropout shares, hence dropout 0), the mashed chunks as FedEgoClient::Mash,
// the server's batches as FedEgoServer::TrainPhi. The differential test fails if these drift.
absl::Status AddFedEgoDraws(FederationTrace& trace) {
  const fl::FederationOptions& o = trace.options;
  const int64_t num_features = trace.shards.front().num_features, num_classes = trace.shards.front().num_classes;
  FGL_ASSIGN_OR_RETURN(fl::MethodConfig config, fl::ServerMethodConfig(o, num_features, num_classes));
  FGL_ASSIGN_OR_RETURN(const fedego::FedEgoParams p, fl::MethodParams<fedego::FedEgoParams>(config));
  FGL_ASSIGN_OR_RETURN(const nn::EgoSageOptions e, nn::ParseEgoSageSpec(config.model_spec));
  if (e.dropout > 0) {
    return absl::InvalidArgumentError("fedego draws: ego-trees need dropout=0 (masks share their stream)");
  }
  const bool personalise = !(p.has_fixed_lambda() && p.fixed_lambda() == 0);
  for (int r = 1; r <= o.spec.rounds(); ++r) {
    const fl::RoundInfo server_round = fl::ServerRound(o, r);
    int64_t mashed = 0;
    for (const fl::ClientShard& s : trace.shards) {
      const fl::ClientData& c = *s.data;
      const uint64_t seed = fl::ClientRound(server_round, c.id).seed;
      const std::string prefix = absl::StrCat("round", r, "/client", c.id, "/fedego/");
      std::vector<int64_t> pool = fl::MaskedNodes(c.split.train);
      const int64_t per_epoch = std::min<int64_t>(
          static_cast<int64_t>(e.epoch_fraction * static_cast<double>(c.data.num_nodes())), pool.size());
      nn::DropoutSeedScope stream(seed);
      graph::Rng rng(seed, "minibatch");
      for (int epoch = 0; per_epoch > 0 && epoch < o.spec.local_epochs(); ++epoch) {
        rng.ShuffleFront(pool, per_epoch);
        for (int64_t begin = 0, b = 0; begin < per_epoch; begin += e.batch, ++b) {
          const int64_t size = std::min<int64_t>(e.batch, per_epoch - begin);
          graph::Rng trees(nn::NextStochasticSeed());
          trace.Add(absl::StrCat(prefix, "epoch", epoch, "/batch", b),
                    graph::SampleEgoTrees(c.view->graph(), absl::MakeConstSpan(pool.data() + begin, size), e.layers,
                                          e.fanout, trees));
        }
      }
      if (!personalise) continue;
      std::vector<int64_t> chunks = fl::MaskedNodes(c.split.train);
      if (p.reshuffle_chunks()) {
        graph::Rng order(seed, "fedego/chunks");
        order.Shuffle(chunks);
      }
      graph::Rng mash(seed, "fedego/mash");
      trace.Add(prefix + "mash", graph::SampleEgoTrees(c.data.graph, chunks, e.layers, e.fanout, mash));
      mashed += (static_cast<int64_t>(chunks.size()) + e.batch - 1) / e.batch;
    }
    if (mashed == 0) continue;
    graph::Rng rng(server_round.seed, "fedego/server");
    const int64_t per_epoch = static_cast<int64_t>(p.server_epoch_fraction() * static_cast<double>(mashed));
    std::vector<int64_t> order(mashed);
    for (int64_t i = 0; i < mashed; ++i) order[i] = i;
    for (int epoch = 0; epoch < p.server_epochs(); ++epoch) {
      for (int64_t i = 0; i < per_epoch; ++i) std::swap(order[i], order[i + rng.UniformInt(mashed - i)]);
      for (int64_t begin = 0, b = 0; begin < per_epoch; begin += e.batch, ++b) {
        const int64_t size = std::min<int64_t>(e.batch, per_epoch - begin);
        const std::string prefix = absl::StrCat("round", r, "/server/fedego/epoch", epoch, "/batch", b, "/");
        trace.Add(prefix + "graphs",
                  torch::tensor(torch::ArrayRef<int64_t>(order.data() + begin, size), torch::kInt64));
        if (p.server_tree() == fedego::FedEgoParams::RESAMPLE) {
          trace.Add(prefix + "positions", graph::ResampleEgoTreePositions(e.layers, e.fanout, size, rng));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Trace() {
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  std::vector<ViewRates> views;
  for (const std::string& v : absl::GetFlag(FLAGS_views)) {
    std::vector<std::string> parts = absl::StrSplit(v, ':');
    ViewRates rates;
    if (parts.size() != 3 || !absl::SimpleAtod(parts[1], &rates.edge_drop) ||
        !absl::SimpleAtod(parts[2], &rates.feature_mask)) {
      return absl::InvalidArgumentError(absl::StrCat("--views: '", v, "' is not NAME:EDGE_DROP:FEATURE_MASK"));
    }
    rates.name = parts[0];
    views.push_back(rates);
  }
  if (views.empty() != absl::GetFlag(FLAGS_view_stream).empty()) {
    return absl::InvalidArgumentError("--views and --view_stream go together");
  }
  FGL_ASSIGN_OR_RETURN(FederationTrace trace, TraceFederation(absl::GetFlag(FLAGS_spec), absl::GetFlag(FLAGS_seed)));
  if (!views.empty()) AddViewDraws(absl::GetFlag(FLAGS_view_stream), views, &trace);
  if (trace.options.spec.method() == "fedtad") FGL_RETURN_IF_ERROR(AddFedTadDraws(trace));
  if (trace.options.spec.method() == "fedpub") FGL_RETURN_IF_ERROR(AddFedPubProxy(trace));
  if (trace.options.spec.method() == "fedego") FGL_RETURN_IF_ERROR(AddFedEgoDraws(trace));
  FGL_RETURN_IF_ERROR(trace.Write(absl::GetFlag(FLAGS_out)));
  std::cout << "trace: " << trace.members.size() << " arrays, " << trace.result.rounds_size()
            << " rounds, final test " << trace.result.result().test_acc() << " -> " << absl::GetFlag(FLAGS_out) << "\n";
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
