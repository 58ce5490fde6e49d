// Writes a round-level trace of one in-process federation as an .npz, for the differential test
// against the port of the authors' code (methods/fedtad/reference/fedtad_differential_test.py):
// every client's data, every message exchanged, and, for FedTAD, the server's initial generator and
// each iteration's noise z, so that the port can run on exactly our inputs and draws.
//
// Members (numpy keys): client<k>/{x,edge_index,y,train,val,test}; prepare/client<k>/<tensor>;
// round<r>/broadcast/<tensor>; round<r>/client<k>/<tensor> (the reply) and round<r>/client<k>/
// scalar/<name>; eval<r>/<tensor> (the model scored after round r, the server's); generator/<tensor>
// (FedTAD's initial generator) and round<r>/noise [I, B, noise_dim].
//
//   fedtad_trace --spec='dataset: "csbm:num_nodes=300" clients: 3 method: "fedtad" rounds: 3'
//                --out=/tmp/trace.npz
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fl/federation_driver.h"
#include "fl/federation_setup.h"
#include "fl/method_params.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "google/protobuf/text_format.h"
#include "graph/io/npz_writer.h"
#include "methods/fedtad/distillation.h"
#include "methods/fedtad/fedtad.pb.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "FederationSpec textproto (fl/proto/federation.proto).");
ABSL_FLAG(uint64_t, seed, 2024, "The run's training seed.");
ABSL_FLAG(std::string, out, "", "Where to write the trace (.npz).");

namespace fgl::methods::fedtad {
namespace {

using graph::io::testing::NpzMember;
using graph::io::testing::NpyFromValues;

template <typename T>
NpzMember Member(const std::string& name, const torch::Tensor& t) {
  const torch::Tensor c = t.detach().cpu().contiguous();
  std::vector<T> values(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
  return {name + ".npy", NpyFromValues<T>(c.sizes().vec(), values)};
}

NpzMember TensorMember(const std::string& name, const torch::Tensor& t) {
  if (t.scalar_type() == torch::kBool) {
    const torch::Tensor c = t.cpu().contiguous();
    std::vector<bool> values(c.numel());
    for (int64_t i = 0; i < c.numel(); ++i) values[i] = c.data_ptr<bool>()[i];
    return {name + ".npy", NpyFromValues<bool>(c.sizes().vec(), values)};
  }
  if (t.scalar_type() == torch::kInt64) return Member<int64_t>(name, t);
  return Member<float>(name, t.to(torch::kFloat));
}

absl::Status AddMessage(const std::string& prefix, const fl::proto::Message& m, std::vector<NpzMember>* out) {
  FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(m));
  for (const auto& [name, t] : tensors) out->push_back(TensorMember(absl::StrCat(prefix, "/", name), t));
  for (const auto& [name, v] : m.scalars()) {
    out->push_back({absl::StrCat(prefix, "/scalar/", name, ".npy"), NpyFromValues<double>({}, {v})});
  }
  return absl::OkStatus();
}

absl::Status Trace() {
  fl::FederationOptions o;
  if (!google::protobuf::TextFormat::ParseFromString(absl::GetFlag(FLAGS_spec), &o.spec)) {
    return absl::InvalidArgumentError("--spec is not a FederationSpec textproto");
  }
  if (absl::GetFlag(FLAGS_out).empty()) return absl::InvalidArgumentError("--out is required");
  o.seed = absl::GetFlag(FLAGS_seed);
  o.cache_dir = "none";
  o.strict = true;
  FGL_ASSIGN_OR_RETURN(o, fl::ResolveOptions(o));
  std::vector<NpzMember> members;

  // Every client's data, as the federation builds it.
  std::vector<int> ids(o.spec.clients());
  for (int k = 0; k < o.spec.clients(); ++k) ids[k] = k;
  FGL_ASSIGN_OR_RETURN(std::vector<fl::ClientShard> shards, fl::LoadClientShards(o, ids));
  for (const fl::ClientShard& s : shards) {
    const fl::ClientData& c = *s.data;
    const std::string p = absl::StrCat("client", c.id, "/");
    const graph::CsrGraph& g = c.data.graph;
    const torch::Tensor source = torch::repeat_interleave(torch::arange(g.num_nodes()), g.row_ptr().diff());
    members.push_back(TensorMember(p + "edge_index", torch::stack({source, g.col()})));
    members.push_back(TensorMember(p + "x", c.data.features));
    members.push_back(TensorMember(p + "y", c.data.labels));
    members.push_back(TensorMember(p + "train", c.split.train));
    members.push_back(TensorMember(p + "val", c.split.val));
    members.push_back(TensorMember(p + "test", c.split.test));
  }

  // Every exchanged message.
  absl::Status failed;
  std::map<int, bool> eval_seen;
  fl::DriverHooks hooks;
  hooks.on_exchange = [&](int k, const fl::ClientTask& task, const fl::ClientAnswer& answer) {
    if (!failed.ok()) return;
    if (task.kind == fl::ClientTask::Kind::kPrepare && answer.reply) {
      failed = AddMessage(absl::StrCat("prepare/client", k), *answer.reply, &members);
    }
    if (task.kind == fl::ClientTask::Kind::kTrain && task.exchange == 0) {
      const std::string r = absl::StrCat("round", task.round);
      if (k == 0 && failed.ok()) failed = AddMessage(r + "/broadcast", *task.message.message, &members);
      if (answer.reply && failed.ok()) failed = AddMessage(absl::StrCat(r, "/client", k), *answer.reply, &members);
    }
    if (task.eval_round > 0 && task.eval_model.message && !eval_seen[task.eval_round] && failed.ok()) {
      eval_seen[task.eval_round] = true;
      failed = AddMessage(absl::StrCat("eval", task.eval_round), *task.eval_model.message, &members);
    }
  };
  FGL_ASSIGN_OR_RETURN(fl::FederationResult result, fl::RunFederation(o, hooks));
  FGL_RETURN_IF_ERROR(failed);

  // FedTAD's draws: the initial generator and each round's noise (aggregate 0: FedAvg has one).
  if (o.spec.method() == "fedtad") {
    const int64_t num_features = shards.front().num_features, num_classes = shards.front().num_classes;
    FGL_ASSIGN_OR_RETURN(fl::MethodConfig config, fl::ServerMethodConfig(o, num_features, num_classes));
    FGL_ASSIGN_OR_RETURN(const FedTadParams p, fl::MethodParams<FedTadParams>(config));
    ConditionalGenerator generator = InitialGenerator(p.noise_dim(), num_classes, num_features, config.seed);
    for (const auto& item : generator->named_parameters(true)) {
      members.push_back(TensorMember("generator/" + item.key(), item.value()));
    }
    for (int r = 1; r <= o.spec.rounds(); ++r) {
      graph::Rng stream = NoiseStream(DistillSeed(fl::ServerRound(o, r).seed, 0));
      std::vector<torch::Tensor> z;
      for (int it = 0; it < p.iterations(); ++it) z.push_back(DrawNoise(stream, p.num_pseudo(), p.noise_dim()));
      if (!z.empty()) members.push_back(TensorMember(absl::StrCat("round", r, "/noise"), torch::stack(z)));
    }
  }
  FGL_ASSIGN_OR_RETURN(std::string bytes, graph::io::testing::NpzBytes(members, /*deflate=*/false));
  FGL_RETURN_IF_ERROR(graph::io::testing::WriteBytes(absl::GetFlag(FLAGS_out), bytes));
  std::cout << "trace: " << members.size() << " arrays, " << result.rounds.size() << " rounds, final test "
            << result.test_acc << " -> " << absl::GetFlag(FLAGS_out) << "\n";
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
