#include "fl/node_level/federation.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "fl/algorithm.h"
#include "fl/checkpoint_file.h"
#include "fl/evaluation.h"
#include "fl/node_level/params.pb.h"
#include "fl/node_level/server_side.h"
#include "fl/optimizer_state.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/round_records.h"
#include "fl/tensor_codec.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/io/file.h"
#include "graph/random.h"
#include "graph/split.h"
#include "nn/graph_view.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::node_level {
namespace {

using Clock = std::chrono::steady_clock;

// The batched runner's own checkpoint layout (the driver's version 2 holds a pending evaluation;
// this one holds every finished round and the users' tensors as one message).
constexpr uint32_t kCheckpointVersion = 1001;

// Percent as 100·hits/n. nn::Accuracy's fraction times 100 rounds differently in the last bit,
// and the recorded runs hold these values.
double Accuracy(const torch::Tensor& logits, const torch::Tensor& labels, const torch::Tensor& mask) {
  const int64_t n = mask.sum().item<int64_t>();
  if (n == 0) return 0;
  torch::Tensor hit = logits.argmax(1).eq(labels).logical_and(mask);
  return 100.0 * static_cast<double>(hit.sum().item<int64_t>()) / static_cast<double>(n);
}

// The server's parameters and Adam state, and the users' tensors and step count: a checkpoint's.
fl::proto::Message ServerState(ServerSide& server, const fl::NamedTensors& params) {
  fl::proto::Message m;
  fl::AddTensors(params, &m);
  fl::SaveAdamState(server.optimizer(), params, "adam.", &m);
  return m;
}

fl::proto::Message UsersState(UserModels& users) {
  fl::proto::Message m;
  fl::AddTensors(users.State(), &m);
  (*m.mutable_scalars())["step"] = static_cast<double>(users.step());
  return m;
}

thread_local const RoundTracer* current_tracer = nullptr;

}  // namespace

RoundTracerScope::RoundTracerScope(RoundTracer tracer) : tracer_(std::move(tracer)), previous_(current_tracer) {
  current_tracer = &tracer_;
}

RoundTracerScope::~RoundTracerScope() { current_tracer = previous_; }

uint64_t RoundDropoutSeed(uint64_t run_seed, int round) {
  return graph::Rng::Derive(run_seed, absl::StrCat("nfedgnn/round", round));
}

absl::StatusOr<fl::proto::FederationResult> RunNodeLevelFederation(
    const fl::ResolvedOptions& resolved, const std::function<void(const fl::proto::RoundRecord&)>& on_round,
    const UserModelsFactory& make_users, bool laplacian_allowed) {
  const fl::FederationOptions& o = *resolved;
  const std::string& method = o.spec.method();
  if (o.device != "cpu") {
    return absl::UnimplementedError(absl::StrCat(method, ": the batched node-level runner runs on the CPU only, not '",
                                                 o.device, "'"));
  }
  if (o.eval().dropout_at_eval()) {
    return absl::InvalidArgumentError(absl::StrCat(method, " scores the split model without dropout (§B.4): dropout_at_eval must be off"));
  }
  if (o.spec.partitioner() != "node_level") {
    return absl::InvalidArgumentError(absl::StrCat(method, " is node-level FL: partitioner must be 'node_level', not '",
                                                   o.spec.partitioner(), "'"));
  }
  if (o.spec.client_fraction() != 1.0) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": every user takes part in every round (client_fraction 1), not ",
                                                   o.spec.client_fraction()));
  }
  if (o.spec.local_epochs() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": one forward/backward per round (local_epochs 1), not ",
                                                   o.spec.local_epochs()));
  }
  if (o.eval().model() != fl::proto::EvalProtocol::GLOBAL) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": the server scores the split model (eval model 'global')"));
  }
  FGL_ASSIGN_OR_RETURN(const NfedgnnParams params, fl::UnpackParams<NfedgnnParams>(o.spec.method_params()));
  if (!laplacian_allowed && params.laplacian_weight() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(method, " has no Laplacian term: laplacian_weight must be 0"));
  }
  if (!laplacian_allowed && params.has_user_init() && params.user_init() == NfedgnnParams::INDEPENDENT) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": every user starts from the averaged map (user_init SHARED)"));
  }
  if (!laplacian_allowed && params.skip_zero_gradient_users()) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": skip_zero_gradient_users applies to nFedGNN's private maps only"));
  }
  FGL_ASSIGN_OR_RETURN(const SplitModelSpec model, ParseSplitModel(o.spec.model()));

  FGL_ASSIGN_OR_RETURN(graph::Dataset data, graph::LoadDataset(o.spec.dataset(), graph::ResolveDataDir(o.spec.data_dir()),
                                                               o.spec.partition_seed()));
  const int64_t n = data.num_nodes();
  if (o.spec.clients() != n) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": one user per node, so clients must be ", n, " for ",
                                                   o.spec.dataset(), ", not ", o.spec.clients()));
  }
  FGL_ASSIGN_OR_RETURN(graph::NodeSplit split, graph::MakeSplit(o.spec.split(), data, o.spec.partition_seed()));
  const torch::Tensor labels = data.labels;

  // Everything random derives from the run's seed: user and server initialisation, dropout.
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ServerSide> server,
                       ServerSide::Create(model, data, split, o.spec.lr(), o.spec.weight_decay(), params, o.seed));
  const UserFeatures features = UserFeatures::FromDense(data.features);
  std::unique_ptr<UserModels> users = make_users(
      features, UserOptionsFor(model, params, o.spec.lr(), o.spec.weight_decay(),
                               graph::Rng::Derive(o.seed, "nfedgnn/user_init")));

  // Float32 payloads per user and round (the paper's Table 1 counts the uploads).
  const int64_t per_user = (model.latent_width() + users->model_floats_per_user()) * 4;

  fl::proto::FederationResult result;
  const Clock::time_point start = Clock::now();
  // Checkpoints: the server's model and Adam state, every user's tensors, the rounds so far.
  // Seeds are derived per round, so a resumed run continues bit for bit.
  const std::string ckpt_path = o.checkpoint_dir.empty() ? "" : o.checkpoint_dir + "/checkpoint.pb";
  const fl::NamedTensors server_params = server->Parameters();
  int first_round = 1;
  double checkpoint_s = 0;  // spent writing checkpoints: not the rounds' time
  Clock::time_point last_checkpoint = start;
  std::unique_ptr<fl::CheckpointReader> file;
  if (o.resume && !ckpt_path.empty()) {
    FGL_ASSIGN_OR_RETURN(file, fl::OpenCheckpointToResume(ckpt_path, kCheckpointVersion, o.Fingerprint()));
  }
  if (file) {
    const fl::proto::Checkpoint& ckpt = file->header();
    if (ckpt.version() != kCheckpointVersion || ckpt.run_fingerprint() != o.Fingerprint()) {
      return absl::FailedPreconditionError(absl::StrCat(ckpt_path, ": checkpoint of a different run (version ",
                                                        ckpt.version(), ", ", ckpt.run_fingerprint(), ")"));
    }
    if (ckpt.round() < 1 || ckpt.round() > o.spec.rounds() || ckpt.records_size() != ckpt.round()) {
      return absl::DataLossError(absl::StrCat(ckpt_path, ": inconsistent checkpoint"));
    }
    FGL_ASSIGN_OR_RETURN(const fl::proto::Message users_state, file->NextClientState());  // all users in one
    if (!file->AtEnd()) return absl::DataLossError(absl::StrCat(ckpt_path, ": more than the users' state"));
    FGL_RETURN_IF_ERROR(fl::LoadTensors(ckpt.server(), server_params));
    FGL_ASSIGN_OR_RETURN(auto server_tensors, fl::DecodeTensors(ckpt.server()));
    FGL_RETURN_IF_ERROR(fl::RestoreAdamState(ckpt.server(), server_tensors, server_params, "adam.", ckpt_path,
                                             &server->optimizer()));
    FGL_RETURN_IF_ERROR(fl::LoadTensors(users_state, users->State()));
    auto step = users_state.scalars().find("step");
    if (step == users_state.scalars().end() || step->second != ckpt.round()) {
      return absl::DataLossError(absl::StrCat(ckpt_path, ": the users' step count is not the round's"));
    }
    users->set_step(static_cast<int64_t>(step->second));
    for (const fl::proto::RoundRecord& p : ckpt.records()) {
      *result.add_rounds() = p;
      fl::AddRoundTraffic(p, *result.mutable_result());
    }
    first_round = ckpt.round() + 1;
    result.set_resumed_s(std::max(0.0, ckpt.rounds_s()));
  }
  const RoundTracer* tracer = current_tracer;  // tests only
  RoundTrace trace;
  if (tracer != nullptr) {
    trace.round = first_round - 1;
    trace.data = &data;
    trace.split = &split;
    trace.features = &features;
    trace.server = ServerState(*server, server_params);
    trace.users = UsersState(*users);
    (*tracer)(trace);
  }
  for (int t = first_round; t <= o.spec.rounds(); ++t) {
    const Clock::time_point round_start = Clock::now();
    nn::DropoutSeedScope dropout_seed(RoundDropoutSeed(o.seed, t));
    fl::proto::RoundRecord rec;
    rec.set_round(t);
    // Users: latents up (dropout on their own input where the model has it).
    const torch::Tensor values = nn::Dropout(features.values, model.input_dropout, /*training=*/true);
    const torch::Tensor latents = users->Latents(values);
    // Server: one step, and every user's ∂(L_CE + λ·L_reg)/∂x̄_i.
    torch::Tensor gradients;
    const double train_loss = server->Step(latents, &gradients, tracer != nullptr ? &trace.step : nullptr);
    if (tracer != nullptr) {
      trace.round = t;
      trace.values = values.clone();
      trace.latents = latents.detach().clone();
      trace.gradients = gradients.clone();
      trace.loss = train_loss;
    }
    // Users: one Adam step each on the gradient that came down.
    users->Step(values, gradients);
    rec.set_participants(static_cast<int>(n));
    rec.set_bytes_up(n * per_user);
    rec.set_bytes_down(n * per_user);
    rec.set_seconds(std::chrono::duration<double>(Clock::now() - round_start).count());
    // Evaluation of the model after round t: users send eval-mode latents (not counted, §B.4).
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor eval_logits = server->EvalLogits(users->Latents(features.values));
      rec.set_val_acc(Accuracy(eval_logits, labels, split.val));
      rec.set_test_acc(Accuracy(eval_logits, labels, split.test));
      if (tracer != nullptr) trace.eval_logits = eval_logits.clone();
    }
    if (tracer != nullptr) {
      trace.server = ServerState(*server, server_params);
      trace.users = UsersState(*users);
      (*tracer)(trace);
    }
    if (!std::isfinite(train_loss)) {
      return absl::InternalError(absl::StrCat(method, ": the training loss became ", train_loss, " in round ", t));
    }
    rec.set_train_loss(train_loss);
    fl::AddRoundTraffic(rec, *result.mutable_result());
    if (on_round) on_round(rec);
    *result.add_rounds() = std::move(rec);
    if (!ckpt_path.empty() &&
        o.CheckpointDue(t, std::chrono::duration<double>(Clock::now() - last_checkpoint).count())) {
      const Clock::time_point write_start = Clock::now();
      fl::proto::Checkpoint ckpt;
      ckpt.set_rounds_s(result.resumed_s() + std::chrono::duration<double>(write_start - start).count() - checkpoint_s);
      ckpt.set_version(kCheckpointVersion);
      ckpt.set_run_fingerprint(o.Fingerprint());
      ckpt.set_round(t);
      *ckpt.mutable_records() = result.rounds();  // no per-client detail here
      *ckpt.mutable_server() = ServerState(*server, server_params);
      const fl::proto::Message users_state = UsersState(*users);
      FGL_RETURN_IF_ERROR(fl::WriteCheckpointBestEffort(ckpt_path, ckpt, t, [&](fl::CheckpointWriter& w) {
                            return w.AddClientState(users_state);
                          }).status());
      last_checkpoint = Clock::now();
      checkpoint_s += std::chrono::duration<double>(last_checkpoint - write_start).count();
    }
  }
  result.mutable_result()->set_train_s(result.resumed_s() + std::chrono::duration<double>(Clock::now() - start).count() -
                                       checkpoint_s);
  FGL_RETURN_IF_ERROR(fl::CompleteResult(resolved, result));
  return result;
}

}  // namespace fgl::fl::node_level
