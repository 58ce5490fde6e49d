// A round-level trace of one in-process federation, written as an .npz for the differential tests
// against ports of the authors' code (methods/<m>/reference/): every client's data and initial
// state, and every message exchanged. A method's trace binary adds its own random draws.
//
// Members (numpy keys): client<k>/{x,edge_index,y,train,val,test} (edge_index in CSR order: the
// order of a per-entry mask); init/client<k>/<tensor> and init/server/<tensor> (the states
// before round 1);
// prepare/client<k>/<tensor>; round<r>/broadcast/<tensor> (client 0's task; with a personalised
// broadcast also round<r>/to_client<k>/<tensor> for k > 0); round<r>/client<k>/<tensor> (the reply)
// and .../scalar/<name>; eval<r>/<tensor> (the server's model scored after round r);
// state<r>/server/<tensor> and state<r>/client<k>/<tensor> (every state after round r).
//
// A batched node-level method (a `federation` runner: nFedGNN, CNFGNN; fl/node_level) has one user
// per node and no per-client messages; its trace (fl::node_level::RoundTracer) holds instead:
// users/{x,edge_index,y,train,val,test} (the whole graph; edge_index in CSR order),
// users/entry_{user,col} (the users' non-zero features in the order of the runtime's per-entry
// tensors), server/edge_index [2, E'] (source, target of the server's edges with self-loops: the
// order of its attention tensors); init/{server,users}/<tensor> (the states before round 1);
// round<r>/{values,latents,logits,gradients,eval_logits} and round<r>/scalar/{loss,ce,reg};
// round<r>/dropout/<mask> (keep masks, redrawn from the round's stream in the order the round
// draws them: GCN hidden [n, hidden]; GAT input [nnz], attn1 [E', heads], hidden [n, heads·hidden],
// attn2 [E', 1]; a rate of 0 draws nothing); state<r>/{server,users}/<tensor> (after round r; the
// server's Adam state as adam.exp_avg.<name>, adam.exp_avg_sq.<name>, scalar adam.step.<name>).
#ifndef FGL_METHODS_TESTING_FEDERATION_TRACE_H_
#define FGL_METHODS_TESTING_FEDERATION_TRACE_H_

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/federated_data.h"
#include "fl/federation.h"
#include "fl/proto/message.pb.h"
#include "graph/io/npz_writer.h"

namespace fgl::methods::testing {

struct FederationTrace {
  fl::FederationOptions options;  // resolved
  std::vector<fl::ClientShard> shards;
  fl::proto::FederationResult result;
  std::vector<graph::io::testing::NpzMember> members;
  std::map<std::string, double> scalars;  // every message scalar by its member name, without ".npy"

  void Add(const std::string& name, const torch::Tensor& tensor);
  absl::Status AddMessage(const std::string& prefix, const fl::proto::Message& message);
  absl::Status Write(const std::string& path) const;
};

// One augmented view's drop rates, drawn as nn::Augment draws them: edges, then feature columns.
struct ViewRates {
  std::string name;
  double edge_drop = 0, feature_mask = 0;
};

// The views every client draws in every local epoch of every round from its round stream
// Rng(client round seed, `stream`), `per_epoch` in order, as keep masks:
// round<r>/client<k>/views/<epoch>/<name>_{edge_keep,feature_keep} (edge masks over the client's
// edge_index entries; a rate of 0 draws nothing and keeps everything).
void AddViewDraws(const std::string& stream, const std::vector<ViewRates>& per_epoch, FederationTrace* trace);

// Runs the federation `spec_text` (an fl.proto.FederationSpec textproto) with training seed `seed`,
// strictly (a failing client fails the run), and traces it (a batched node-level method as above;
// `shards` then stays empty).
// `on_client_state`, when given, sees every client's state after every round (state<r>/client<k>,
// already traced) and may add members derived from it (AdaFGL's scored prediction).
// `on_server_state` likewise sees the server's state after every round (state<r>/server; a typed
// state such as GCFL+'s is the method's to unpack).
using ClientStateHook =
    std::function<absl::Status(int round, int client, const fl::proto::Message& state, FederationTrace* trace)>;
using ServerStateHook = std::function<absl::Status(int round, const fl::proto::Message& state, FederationTrace* trace)>;
absl::StatusOr<FederationTrace> TraceFederation(const std::string& spec_text, uint64_t seed,
                                                const ClientStateHook& on_client_state = nullptr,
                                                const ServerStateHook& on_server_state = nullptr);

}  // namespace fgl::methods::testing

#endif  // FGL_METHODS_TESTING_FEDERATION_TRACE_H_
