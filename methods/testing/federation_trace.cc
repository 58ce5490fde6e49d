#include "methods/testing/federation_trace.h"

#include <stdlib.h>

#include <filesystem>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fl/checkpoint_file.h"
#include "fl/federation_driver.h"
#include "fl/node_level/federation.h"
#include "fl/node_level/split_server.h"
#include "fl/registry.h"
#include "fl/round_schedule.h"
#include "fl/run_setup.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "graph/augment.h"
#include "graph/random.h"
#include "google/protobuf/text_format.h"
#include "nn/graph_view.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::testing {
namespace {

using graph::io::testing::NpyFromValues;
using graph::io::testing::NpzMember;

template <typename T>
NpzMember Member(const std::string& name, const torch::Tensor& t) {
  const torch::Tensor c = t.detach().cpu().contiguous();
  std::vector<T> values(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
  return {name + ".npy", NpyFromValues<T>(c.sizes().vec(), values)};
}

// A graph's entries as [2, E] (row, column) in CSR order.
torch::Tensor CsrEdges(const graph::CsrGraph& g) {
  return torch::stack({torch::repeat_interleave(torch::arange(g.num_nodes()), g.row_ptr().diff()), g.col()});
}

// The node-level runtime's run (`o` resolved), through its RoundTracer; header comment.
absl::StatusOr<FederationTrace> TraceNodeLevel(const fl::FederationOptions& o) {
  FederationTrace trace;
  trace.options = o;
  FGL_ASSIGN_OR_RETURN(const fl::node_level::SplitModelSpec model, fl::node_level::ParseSplitModel(o.spec.model()));
  absl::Status failed;
  torch::Tensor server_edges;
  auto scalar = [&](const std::string& name, double v) {
    trace.members.push_back({name + ".npy", graph::io::testing::NpyFromValues<double>({}, {v})});
    trace.scalars[name] = v;
  };
  fl::node_level::RoundTracerScope scope([&](const fl::node_level::RoundTrace& t) {
    if (!failed.ok()) return;
    const bool initial = !t.values.defined();  // before the first round
    const std::string state = initial ? "init" : absl::StrCat("state", t.round);
    if (initial) {
      const graph::Dataset& d = *t.data;
      trace.Add("users/x", d.features);
      trace.Add("users/edge_index", CsrEdges(d.graph));
      trace.Add("users/y", d.labels);
      trace.Add("users/train", t.split->train);
      trace.Add("users/val", t.split->val);
      trace.Add("users/test", t.split->test);
      trace.Add("users/entry_user", t.features->user_of_entry);
      trace.Add("users/entry_col", t.features->col);
      absl::StatusOr<nn::GraphView> view = nn::GraphView::Create(d.graph);
      if (!view.ok()) {
        failed = view.status();
        return;
      }
      const nn::CsrPattern& p = view->adjacency_with_self_loops();
      server_edges = torch::stack({p.col(), p.row_index()});
      trace.Add("server/edge_index", server_edges);
    } else {
      const std::string r = absl::StrCat("round", t.round, "/");
      trace.Add(r + "values", t.values);
      trace.Add(r + "latents", t.latents);
      trace.Add(r + "logits", t.step.logits);
      trace.Add(r + "gradients", t.gradients);
      trace.Add(r + "eval_logits", t.eval_logits);
      scalar(r + "scalar/loss", t.loss);
      scalar(r + "scalar/ce", t.step.ce);
      scalar(r + "scalar/reg", t.step.reg);
      // The round's dropout masks, drawn again from its stream in the round's order (each
      // nn::Dropout with a rate > 0 takes the stream's next seed).
      nn::DropoutSeedScope stream(fl::node_level::RoundDropoutSeed(o.seed, t.round));
      auto draw = [&](const std::string& name, std::vector<int64_t> shape, double p) {
        if (p <= 0) return torch::Tensor();
        torch::Tensor keep = nn::Dropout(torch::ones(shape), p, /*training=*/true).ne(0);
        trace.Add(r + "dropout/" + name, keep);
        return keep;
      };
      const int64_t n = t.data->num_nodes(), e = server_edges.size(1);
      if (model.gat) {
        const torch::Tensor input = draw("input", {t.values.size(0)}, model.input_dropout);
        if (input.defined() && !torch::equal(input, t.values.ne(0))) {
          failed = absl::InternalError(absl::StrCat("round ", t.round, ": the redrawn input dropout is not the run's"));
          return;
        }
        draw("attn1", {e, model.heads}, model.attn_dropout);
        draw("hidden", {n, model.latent_width()}, model.dropout);
        draw("attn2", {e, 1}, model.attn_dropout);
      } else {
        draw("hidden", {n, model.hidden}, model.dropout);
      }
    }
    failed = trace.AddMessage(state + "/server", t.server);
    if (failed.ok()) failed = trace.AddMessage(state + "/users", t.users);
  });
  FGL_ASSIGN_OR_RETURN(trace.result, fl::RunFederation(o));
  FGL_RETURN_IF_ERROR(failed);
  return trace;
}

}  // namespace

void FederationTrace::Add(const std::string& name, const torch::Tensor& t) {
  if (t.scalar_type() == torch::kBool) {
    const torch::Tensor c = t.detach().cpu().contiguous();
    std::vector<bool> values(c.numel());
    for (int64_t i = 0; i < c.numel(); ++i) values[i] = c.data_ptr<bool>()[i];
    members.push_back({name + ".npy", NpyFromValues<bool>(c.sizes().vec(), values)});
  } else if (t.scalar_type() == torch::kInt64) {
    members.push_back(Member<int64_t>(name, t));
  } else {
    members.push_back(Member<float>(name, t.to(torch::kFloat)));
  }
}

absl::Status FederationTrace::AddMessage(const std::string& prefix, const fl::proto::Message& m) {
  FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(m));
  for (const auto& [name, t] : tensors) Add(absl::StrCat(prefix, "/", name), t);
  for (const auto& [name, v] : m.scalars()) {
    const std::string member = absl::StrCat(prefix, "/scalar/", name);
    members.push_back({member + ".npy", NpyFromValues<double>({}, {v})});
    scalars[member] = v;
  }
  return absl::OkStatus();
}

absl::Status FederationTrace::Write(const std::string& path) const {
  FGL_ASSIGN_OR_RETURN(std::string bytes, graph::io::testing::NpzBytes(members, /*deflate=*/false));
  return graph::io::testing::WriteBytes(path, bytes);
}

void AddViewDraws(const std::string& stream, const std::vector<ViewRates>& per_epoch, FederationTrace* trace) {
  const fl::FederationOptions& o = trace->options;
  for (int r = 1; r <= o.spec.rounds(); ++r) {
    for (const fl::ClientShard& s : trace->shards) {
      const graph::CsrGraph& g = s.data->data.graph;
      graph::Rng views(fl::ClientRound(fl::ServerRound(o, r), s.data->id).seed, stream);
      for (int e = 0; e < o.spec.local_epochs(); ++e) {
        const std::string prefix = absl::StrCat("round", r, "/client", s.data->id, "/views/", e, "/");
        for (const ViewRates& v : per_epoch) {
          trace->Add(prefix + v.name + "_edge_keep", v.edge_drop > 0 ? graph::EdgeKeepMask(g, v.edge_drop, views)
                                                                     : torch::ones({g.num_entries()}, torch::kBool));
          trace->Add(prefix + v.name + "_feature_keep",
                     v.feature_mask > 0 ? graph::FeatureColumnKeepMask(s.num_features, v.feature_mask, views) > 0.5
                                        : torch::ones({s.num_features}, torch::kBool));
        }
      }
    }
  }
}

absl::StatusOr<FederationTrace> TraceFederation(const std::string& spec_text, uint64_t seed,
                                                const ClientStateHook& on_client_state,
                                                const ServerStateHook& on_server_state) {
  FederationTrace trace;
  fl::FederationOptions o;
  if (!google::protobuf::TextFormat::ParseFromString(spec_text, &o.spec)) {
    return absl::InvalidArgumentError(absl::StrCat("not a FederationSpec textproto: ", spec_text));
  }
  o.seed = seed;
  o.cache_dir = "none";
  o.strict = true;
  FGL_ASSIGN_OR_RETURN(const fl::ResolvedOptions resolved, fl::ResolveOptions(o));
  trace.options = o = *resolved;
  FGL_ASSIGN_OR_RETURN(fl::MethodFactories factories, fl::FindMethod(o.spec.method()));
  if (factories.federation) return TraceNodeLevel(o);

  // Every client's data, as the federation builds it, and its state before round 1 (a client of
  // its own, built as the run builds its clients: methods seed their initialisation).
  std::vector<int> ids(o.spec.clients());
  for (int k = 0; k < o.spec.clients(); ++k) ids[k] = k;
  FGL_ASSIGN_OR_RETURN(trace.shards, fl::LoadClientShards(resolved, ids));
  FGL_ASSIGN_OR_RETURN(fl::MethodConfig config, fl::ServerMethodConfig(o, trace.shards.front().num_features,
                                                                       trace.shards.front().num_classes));
  {  // the server's state before round 1, built as the run builds it (init/server/<tensor>)
    FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::ServerAlgorithm> server, factories.server(config));
    FGL_ASSIGN_OR_RETURN(fl::proto::Message state, server->SaveState());
    FGL_RETURN_IF_ERROR(trace.AddMessage("init/server", state));
  }
  for (const fl::ClientShard& s : trace.shards) {
    const fl::ClientData& c = *s.data;
    const std::string p = absl::StrCat("client", c.id, "/");
    trace.Add(p + "edge_index", CsrEdges(c.data.graph));
    trace.Add(p + "x", c.data.features);
    trace.Add(p + "y", c.data.labels);
    trace.Add(p + "train", c.split.train);
    trace.Add(p + "val", c.split.val);
    trace.Add(p + "test", c.split.test);
    FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::ClientAlgorithm> client,
                         factories.client(s.data, fl::ClientMethodConfig(o, config, c.id)));
    FGL_ASSIGN_OR_RETURN(fl::proto::Message state, client->SaveState());
    FGL_RETURN_IF_ERROR(trace.AddMessage(absl::StrCat("init/client", c.id), state));
  }

  // Every exchanged message.
  absl::Status failed;
  std::map<int, bool> eval_seen;
  std::map<int, std::shared_ptr<const fl::proto::Message>> first_message;  // round -> the first task's
  fl::DriverHooks hooks;
  hooks.on_exchange = [&](int k, const fl::ClientTask& task, const fl::ClientAnswer& answer) {
    auto add = [&](const std::string& prefix, const fl::proto::Message& m) {
      if (failed.ok()) failed = trace.AddMessage(prefix, m);
    };
    if (task.kind == fl::ClientTask::Kind::kPrepare && answer.reply) add(absl::StrCat("prepare/client", k), *answer.reply);
    if (task.kind == fl::ClientTask::Kind::kTrain && task.exchange == 0) {
      const std::string r = absl::StrCat("round", task.round);
      if (k == 0) add(r + "/broadcast", *task.message.message);
      // A personalised broadcast (a message of its own per client) is kept per client too.
      if (task.message.message != first_message[task.round]) {
        if (first_message[task.round] == nullptr) {
          first_message[task.round] = task.message.message;
        } else {
          add(absl::StrCat(r, "/to_client", k), *task.message.message);
        }
      }
      if (answer.reply) add(absl::StrCat(r, "/client", k), *answer.reply);
    }
    if (task.eval_round > 0 && task.eval_model.message && !eval_seen[task.eval_round]) {
      eval_seen[task.eval_round] = true;
      add(absl::StrCat("eval", task.eval_round), *task.eval_model.message);
    }
  };
  // Every state after every round (state<r>/server/<tensor>, state<r>/client<k>/<tensor>), from
  // the checkpoint the driver writes after each round: what stays on a client (a private model,
  // a local stage's result) is compared too.
  char scratch[] = "/tmp/fgl_trace_XXXXXX";
  if (mkdtemp(scratch) == nullptr) return absl::InternalError("cannot make a scratch directory under /tmp");
  o.checkpoint_dir = scratch;
  o.checkpoint_every = 1;
  hooks.after_checkpoint = [&](int round) {
    if (!failed.ok()) return;
    absl::StatusOr<std::unique_ptr<fl::CheckpointReader>> reader =
        fl::CheckpointReader::Open(absl::StrCat(scratch, "/checkpoint.pb"));
    if (!reader.ok()) {
      failed = reader.status();
      return;
    }
    failed = trace.AddMessage(absl::StrCat("state", round, "/server"), (*reader)->header().server());
    if (failed.ok() && on_server_state) failed = on_server_state(round, (*reader)->header().server(), &trace);
    for (int k = 0; failed.ok() && !(*reader)->AtEnd(); ++k) {
      absl::StatusOr<fl::proto::Message> client = (*reader)->NextClientState();
      failed = client.ok() ? trace.AddMessage(absl::StrCat("state", round, "/client", k), *client) : client.status();
      if (failed.ok() && on_client_state) failed = on_client_state(round, k, *client, &trace);
    }
  };
  absl::StatusOr<fl::proto::FederationResult> result = fl::RunFederation(o, hooks);  // o checkpoints
  std::filesystem::remove_all(scratch);
  FGL_ASSIGN_OR_RETURN(trace.result, std::move(result));
  FGL_RETURN_IF_ERROR(failed);
  return trace;
}

}  // namespace fgl::methods::testing
