#include "fl/federation_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/catch_exceptions.h"
#include "fl/checkpoint_file.h"
#include "fl/evaluation.h"
#include "fl/phase_profile.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/round_records.h"
#include "fl/round_schedule.h"
#include "fl/tensor_codec.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// 2: a checkpoint holds the last round's pending evaluation (version 1 had none). 3: method state
// may be typed (Message.typed_state, fl/typed_state.h; FedTAD's reliabilities).
constexpr uint32_t kCheckpointVersion = 3;

// A round that is aggregated but not yet scored.
struct PendingEval {
  proto::RoundRecord rec;
  SharedMessage global;  // the model to score (global evaluation); empty: each client's own
  Clock::time_point start;
  std::vector<proto::EvalCounts> counts;  // of the clients scored so far
  std::vector<int64_t> sizes;
  std::vector<SharedMessage> personal;  // per client instead of `global`, from a personalised server
};

bool Unreachable(const absl::Status& s) { return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s); }

// EvalProtocol's early stop after the last of `rounds` (FedEgo's code): past `after_round`, its
// test loss exceeds loss_ratio × the minimum over all of them. No early_stop: never.
bool EarlyStopAfter(const proto::EarlyStop& stop, const google::protobuf::RepeatedPtrField<proto::RoundRecord>& rounds) {
  if (stop.loss_ratio() <= 0 || rounds.empty()) return false;
  const proto::RoundRecord& last = rounds[rounds.size() - 1];
  if (last.round() <= stop.after_round() || !last.has_test_loss()) return false;
  double min_loss = std::numeric_limits<double>::infinity();
  for (const proto::RoundRecord& r : rounds) {
    if (r.has_test_loss()) min_loss = std::min(min_loss, r.test_loss());
  }
  return last.test_loss() > stop.loss_ratio() * min_loss;
}

}  // namespace

SharedMessage SharedMessage::Of(proto::Message m) {
  SharedMessage s;
  s.bytes = std::make_shared<const std::string>(m.SerializeAsString());
  s.message = std::make_shared<const proto::Message>(std::move(m));
  return s;
}

namespace {

// A channel that shows every task and its answer to DriverHooks::on_exchange before the driver
// takes the answer (which may move the reply out).
class TappedChannel final : public ClientChannel {
 public:
  using Tap = std::function<void(int, const ClientTask&, const ClientAnswer&)>;
  TappedChannel(ClientChannel& inner, Tap tap) : inner_(inner), tap_(std::move(tap)) {}

  int num_clients() const override { return inner_.num_clients(); }
  absl::Status BeforeRound(int round) override { return inner_.BeforeRound(round); }
  std::vector<int> Reachable() override { return inner_.Reachable(); }
  void Exchange(const std::map<int, ClientTask>& tasks,
                const std::function<void(int, ClientAnswer&)>& on_answer) override {
    inner_.Exchange(tasks, [&](int k, ClientAnswer& a) {
      tap_(k, tasks.at(k), a);
      on_answer(k, a);
    });
  }
  absl::Status SaveClients(CheckpointWriter& checkpoint) override { return inner_.SaveClients(checkpoint); }
  absl::Status RestoreClients(CheckpointReader& checkpoint) override { return inner_.RestoreClients(checkpoint); }
  void Finish() override { inner_.Finish(); }

 private:
  ClientChannel& inner_;
  Tap tap_;
};

// The run's final global model (a serialised message) holds only finite values: a model that
// diverged is not a result.
absl::Status CheckFiniteModel(const std::string& serialized) {
  proto::Message m;
  if (!m.ParseFromString(serialized)) return absl::InternalError("the final global model does not parse");
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(m));
  for (const auto& [name, t] : tensors) {
    if (t.is_floating_point() && !AllFinite(t)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the final global model is not finite ('", name, "' holds NaN or infinity): the run diverged"));
    }
  }
  return absl::OkStatus();
}

// Phases of the profile (fl/phase_profile.h) the server's side of a round is timed under.
constexpr char kBroadcastPhase[] = "rounds/server broadcast";
constexpr char kAggregatePhase[] = "rounds/server aggregate";

// The run; `stage` names what it is doing, for an exception's error.
absl::StatusOr<proto::FederationResult> Drive(const ResolvedOptions& resolved, ServerAlgorithm& server,
                                              ClientChannel& channel, const DriverHooks& hooks, std::string* stage) {
  const FederationOptions& o = *resolved;
  *stage = "resuming";
  const Clock::time_point train_start = Clock::now();
  const int n = channel.num_clients();
  const proto::EvalProtocol eval = o.eval();
  // Personalised evaluation also ships the server's latest message (each client's own, from a
  // personalised server): each client applies it to its own model its own way before scoring.
  const bool global_eval =
      eval.model() == proto::EvalProtocol::GLOBAL || eval.model() == proto::EvalProtocol::PERSONALIZED;
  PersonalisedServer* const personalised = server.personalised();
  const bool personal_eval = eval.model() == proto::EvalProtocol::PERSONALIZED && personalised != nullptr;
  proto::FederationResult result;
  proto::RunResult& totals = *result.mutable_result();
  int stopped_round = 0;  // the round after which EvalProtocol's early stop ended the run; 0: none
  std::vector<int64_t> sizes(n, 0);  // learnt from the evaluations
  std::optional<PendingEval> pending;
  int first_round = 1;
  std::string no_update_cause;  // the first round in which no client's update was taken, and why
  double checkpoint_s = 0;  // spent writing checkpoints: not the rounds' time
  Clock::time_point last_checkpoint = train_start;

  const std::string ckpt_path = o.checkpoint_dir.empty() ? "" : o.checkpoint_dir + "/checkpoint.pb";
  std::unique_ptr<CheckpointReader> file;
  if (o.resume && !ckpt_path.empty()) {
    FGL_ASSIGN_OR_RETURN(file, OpenCheckpointToResume(ckpt_path, kCheckpointVersion, o.Fingerprint()));
  }
  if (file) {
    const proto::Checkpoint& ckpt = file->header();
    if (ckpt.version() != kCheckpointVersion || ckpt.run_fingerprint() != o.Fingerprint()) {
      return absl::FailedPreconditionError(absl::StrCat(
          ckpt_path, ": checkpoint of a different run (version ", ckpt.version(), ", ", ckpt.run_fingerprint(), ")"));
    }
    if (ckpt.round() < 1 || ckpt.round() > o.spec.rounds() || !ckpt.has_pending_eval() ||
        ckpt.records_size() != ckpt.round() - 1 || ckpt.pending_record().round() != ckpt.round() ||
        ckpt.has_pending_global() != (global_eval && !personal_eval)) {
      return absl::DataLossError(absl::StrCat(ckpt_path, ": inconsistent checkpoint"));
    }
    FGL_RETURN_IF_ERROR(server.RestoreState(ckpt.server()));
    FGL_RETURN_IF_ERROR(channel.RestoreClients(*file));
    for (const proto::RoundRecord& p : ckpt.records()) {
      *result.add_rounds() = p;
      AddRoundTraffic(p, totals);
    }
    // The pending round keeps every client's detail (finished rounds keep only their reports).
    proto::RoundRecord rec = ckpt.pending_record();
    if (rec.clients_size() != n) {
      return absl::DataLossError(absl::StrCat(ckpt_path, ": the pending round records ", rec.clients_size(),
                                              " clients, not the run's ", n));
    }
    // Round `round` already trained for pending_round_s in the process that wrote the checkpoint.
    const auto pending_since = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(std::max(0.0, ckpt.pending_round_s())));
    pending = PendingEval{std::move(rec),
                          global_eval && !personal_eval ? SharedMessage::Of(ckpt.pending_global()) : SharedMessage(),
                          pending_since};
    result.set_resumed_s(std::max(0.0, ckpt.rounds_s()));
    totals.set_preparation_bytes_up(ckpt.preparation_bytes_up());
    if (personal_eval) {
      if (ckpt.pending_personal_size() != n) {
        return absl::DataLossError(absl::StrCat(ckpt_path, ": ", ckpt.pending_personal_size(),
                                                " personal evaluation messages for ", n, " clients"));
      }
      for (const proto::Message& m : ckpt.pending_personal()) pending->personal.push_back(SharedMessage::Of(m));
    }
    first_round = ckpt.round() + 1;
    LOG(INFO) << "resumed from " << ckpt_path << " after round " << ckpt.round();
  }

  *stage = "preparation";
  if (first_round == 1) {
    // The one-off exchange before round 1, counted like any other traffic.
    std::map<int, ClientTask> tasks;
    for (int k : channel.Reachable()) tasks[k].kind = ClientTask::Kind::kPrepare;
    absl::Status failed;
    channel.Exchange(tasks, [&](int k, ClientAnswer& a) {
      absl::Status s = a.status;
      if (s.ok() && a.reply) {
        totals.set_preparation_bytes_up(totals.preparation_bytes_up() + a.bytes_up);
        s = AcceptPreparationOf(server, *a.reply);
      }
      if (!s.ok()) {
        LOG(WARNING) << "preparation: client " << k << " left out: " << s;
        if (o.strict && failed.ok()) failed = s;
      }
    });
    FGL_RETURN_IF_ERROR(failed);
    FGL_RETURN_IF_ERROR(FinishPreparationOf(server));
  }

  // Every reachable client scores the pending round's model, first thing in its next task.
  auto attach_evaluation = [&](std::map<int, ClientTask>& tasks) {
    if (!pending) return;
    for (int k : channel.Reachable()) {
      ClientTask& t = tasks[k];  // a client with no training this round gets an evaluation only
      t.eval_round = pending->rec.round();
      t.eval_model = pending->personal.empty() ? pending->global : pending->personal[k];
    }
  };
  // One client's score of the pending round.
  auto take_evaluation = [&](int k, const ClientAnswer& a) -> absl::Status {
    absl::Status s = a.eval ? a.eval->status() : a.status;
    if (s.ok() && !a.eval) s = absl::DataLossError("no evaluation in the answer");
    if (s.ok()) s = CheckEvalCounts(**a.eval);
    proto::RoundRecord& rec = pending->rec;
    if (!s.ok()) {
      if (!Unreachable(s)) {
        return absl::Status(s.code(), absl::StrCat("round ", rec.round(), ": client ", k, " evaluation: ", s.message()));
      }
      LOG(WARNING) << "round " << rec.round() << ": client " << k << " not evaluated: " << s;
      return absl::OkStatus();
    }
    const proto::EvalCounts& c = **a.eval;
    sizes[k] = c.num_nodes();
    pending->counts.push_back(c);
    pending->sizes.push_back(c.num_nodes());
    const RoundAccuracy acc = WeightedAccuracy(eval.weighting(), {c}, {1});
    rec.mutable_clients(k)->set_val_acc(acc.val);
    rec.mutable_clients(k)->set_test_acc(acc.test);
    // The evaluated round's reports: after its training's, overriding them.
    for (const auto& [name, value] : a.eval_reports) SetClientReport(rec, k, name, value);
    return absl::OkStatus();
  };
  // Completes the pending round's record.
  auto finish_evaluation = [&]() -> absl::Status {
    if (!pending) return absl::OkStatus();
    proto::RoundRecord& rec = pending->rec;
    if (pending->counts.empty()) {
      return absl::UnavailableError(absl::StrCat("round ", rec.round(), ": no client left to evaluate"));
    }
    ScoreRound(eval.weighting(), pending->counts, pending->sizes, rec);
    if (rec.seconds() == 0) rec.set_seconds(Seconds(pending->start));
    AddRoundTraffic(rec, totals);
    *result.add_rounds() = std::move(rec);
    const proto::RoundRecord& done = result.rounds(result.rounds_size() - 1);
    if (done.round() < o.spec.rounds() && EarlyStopAfter(eval.early_stop(), result.rounds())) stopped_round = done.round();
    const bool last = done.round() == o.spec.rounds() || stopped_round == done.round();
    if (last && pending->global.bytes) result.set_final_global(*pending->global.bytes);
    if (last) *totals.mutable_final_client_reports() = done.client_reports();
    VLOG(1) << "round " << done.round() << ": " << done.participants() << " participants, " << done.failed_clients()
            << " left out, " << pending->counts.size() << " evaluated, val " << done.val_acc() << " test "
            << done.test_acc() << " (" << done.seconds() << " s)";
    pending.reset();
    if (hooks.on_round) hooks.on_round(done);
    return absl::OkStatus();
  };

  for (int r = first_round; r <= o.spec.rounds(); ++r) {
    *stage = absl::StrCat("round ", r);
    FGL_RETURN_IF_ERROR(channel.BeforeRound(r));
    const Clock::time_point round_start = Clock::now();
    // A round lasts from its tasks going out to the next round's (its evaluation rides along).
    if (pending) pending->rec.set_seconds(Seconds(pending->start));
    proto::RoundRecord rec = EmptyRoundRecord(r, n);
    const RoundInfo info = ServerRound(o, r);
    const std::vector<int> sampled = SampleClients(o, r, n);
    const int exchanges = ExchangesOf(server);
    if (exchanges < 1) return absl::InternalError(absl::StrCat("the server asks for ", exchanges, " exchanges per round"));
    // A client takes part in the round when every exchange took its reply.
    std::vector<int> accepted(n, 0);
    std::string first_rejection;  // why the round's first left-out client was left out
    for (int e = 0; e < exchanges; ++e) {
      const RoundInfo exchange_info = ServerRound(o, r, e);
      std::vector<char> is_sampled(n, 0);
      std::map<int, ClientTask> tasks;
      // One message for every sampled client, or each its own (personalised methods).
      SharedMessage shared;
      if (personalised == nullptr) {
        ScopedPhase phase(kBroadcastPhase);
        FGL_ASSIGN_OR_RETURN(proto::Message m, server.Broadcast(exchange_info));
        shared = SharedMessage::Of(std::move(m));
      }
      for (int k : sampled) {
        if (accepted[k] < e) continue;  // left out of an earlier exchange: out of this round
        is_sampled[k] = 1;
        ClientTask& t = tasks[k];
        t.kind = ClientTask::Kind::kTrain;
        t.round = r;
        t.exchange = e;
        if (personalised != nullptr) {
          ScopedPhase phase(kBroadcastPhase);
          FGL_ASSIGN_OR_RETURN(proto::Message m, personalised->BroadcastTo(k, exchange_info));
          t.message = SharedMessage::Of(std::move(m));
        } else {
          t.message = shared;
        }
      }
      if (e == 0) attach_evaluation(tasks);  // the previous round's scoring rides on the first
      proto::RoundRecord counted = EmptyRoundRecord(r, 0);  // this exchange's counts; the round's are set after the last
      absl::Status failed;
      channel.Exchange(tasks, [&](int k, ClientAnswer& a) {
        if (!failed.ok()) return;
        const ClientTask& t = tasks.at(k);
        if (t.eval_round > 0) failed = take_evaluation(k, a);
        if (!failed.ok() || !is_sampled[k]) return;
        proto::ClientRoundRecord& cr = *rec.mutable_clients(k);
        cr.set_seconds(cr.seconds() + a.seconds);
        cr.set_bytes_down(cr.bytes_down() + a.bytes_down);
        rec.set_bytes_down(rec.bytes_down() + a.bytes_down);
        absl::StatusOr<proto::Message> reply = absl::DataLossError("no reply");
        if (!a.status.ok()) {
          reply = a.status;
        } else if (a.reply) {
          cr.set_bytes_up(cr.bytes_up() + a.bytes_up);
          rec.set_bytes_up(rec.bytes_up() + a.bytes_up);
          AddTensorBytesByGroup(*a.reply, rec.mutable_tensor_bytes_up());
          reply = std::move(*a.reply);
          a.reply.reset();  // aggregated: the message is not needed again
        }
        ScopedPhase phase(kAggregatePhase);
        const absl::Status st = AccumulateReply(server, reply, cr, counted);
        accepted[k] += st.ok();
        if (!st.ok() && first_rejection.empty()) first_rejection = absl::StrCat("client ", k, ": ", st.ToString());
        if (st.ok()) {
          for (const auto& [name, value] : a.reports) SetClientReport(rec, k, name, value);
        }
        if (!st.ok() && o.strict) failed = st;
      });
      FGL_RETURN_IF_ERROR(failed);
      if (e == 0) FGL_RETURN_IF_ERROR(finish_evaluation());
      // Stopped after the previous round: this round's training is dropped, never scored.
      if (stopped_round > 0) break;
      ScopedPhase phase(kAggregatePhase);
      FGL_RETURN_IF_ERROR(server.FinishRound(exchange_info));
    }
    if (stopped_round > 0) {
      LOG(INFO) << "early stop after round " << stopped_round;
      break;
    }
    for (int k : sampled) {
      const bool participated = accepted[k] == exchanges;
      rec.mutable_clients(k)->set_participated(participated);
      if (participated) {
        rec.set_participants(rec.participants() + 1);
      } else {
        rec.set_failed_clients(rec.failed_clients() + 1);
      }
    }
    if (rec.participants() == 0 && rec.failed_clients() > 0) {
      LOG(WARNING) << "round " << r << ": no update accepted from any of the " << rec.failed_clients()
                   << " sampled clients; the server's model is unchanged (first: " << first_rejection << ")";
      if (no_update_cause.empty()) no_update_cause = absl::StrCat("round ", r, ", ", first_rejection);
    }
    SharedMessage global;
    std::vector<SharedMessage> personal;
    std::optional<ScopedPhase> broadcast(std::in_place, kBroadcastPhase);
    if (personal_eval) {
      for (int k = 0; k < n; ++k) {
        FGL_ASSIGN_OR_RETURN(proto::Message m, personalised->BroadcastTo(k, info));
        personal.push_back(SharedMessage::Of(std::move(m)));
      }
    } else if (global_eval) {
      FGL_ASSIGN_OR_RETURN(proto::Message m, server.Broadcast(info));
      global = SharedMessage::Of(std::move(m));
    }
    broadcast.reset();
    pending = PendingEval{std::move(rec), std::move(global), round_start};
    pending->personal = std::move(personal);
    if (!ckpt_path.empty() && o.CheckpointDue(r, Seconds(last_checkpoint))) {
      ScopedPhase phase("rounds/checkpoint");
      proto::Checkpoint ckpt;
      ckpt.set_rounds_s(result.resumed_s() + Seconds(train_start) - checkpoint_s);
      ckpt.set_pending_round_s(Seconds(pending->start));
      const Clock::time_point write_start = Clock::now();
      ckpt.set_version(kCheckpointVersion);
      ckpt.set_run_fingerprint(o.Fingerprint());
      ckpt.set_round(r);
      for (const proto::RoundRecord& done : result.rounds()) *ckpt.add_records() = WithoutClients(done);
      ckpt.set_has_pending_eval(true);
      ckpt.set_preparation_bytes_up(totals.preparation_bytes_up());
      *ckpt.mutable_pending_record() = pending->rec;
      if (pending->global.message) *ckpt.mutable_pending_global() = *pending->global.message;
      for (const SharedMessage& m : pending->personal) *ckpt.add_pending_personal() = *m.message;
      FGL_ASSIGN_OR_RETURN(*ckpt.mutable_server(), server.SaveState());
      FGL_ASSIGN_OR_RETURN(bool written, WriteCheckpointBestEffort(ckpt_path, ckpt, r, [&](CheckpointWriter& w) {
                             return channel.SaveClients(w);
                           }));
      if (written && hooks.after_checkpoint) hooks.after_checkpoint(r);
      // Neither round r's seconds nor the run's training time include the checkpoint.
      last_checkpoint = Clock::now();
      const Clock::duration write = last_checkpoint - write_start;
      checkpoint_s += std::chrono::duration<double>(write).count();
      pending->start += write;
    }
  }
  *stage = "the last evaluation";
  if (pending) {  // the last round's evaluation has no next round to ride on
    std::map<int, ClientTask> tasks;
    attach_evaluation(tasks);
    absl::Status failed;
    channel.Exchange(tasks, [&](int k, ClientAnswer& a) {
      if (failed.ok()) failed = take_evaluation(k, a);
    });
    FGL_RETURN_IF_ERROR(failed);
    FGL_RETURN_IF_ERROR(finish_evaluation());
  }
  channel.Finish();
  // A run in which no client's update was ever taken trained nothing: it must not read as a result.
  const bool never_updated =
      !result.rounds().empty() &&
      std::all_of(result.rounds().begin(), result.rounds().end(), [](const proto::RoundRecord& rec) {
        return rec.participants() == 0 && rec.failed_clients() > 0;
      });
  if (never_updated) {
    return absl::FailedPreconditionError(
        absl::StrCat("no client's update was accepted in any of the ", result.rounds_size(),
                     " rounds, so the model was never trained (first left out: ",
                     no_update_cause.empty() ? std::string("before a resume") : no_update_cause, ")"));
  }
  if (!result.final_global().empty()) FGL_RETURN_IF_ERROR(CheckFiniteModel(result.final_global()));
  totals.set_train_s(result.resumed_s() + Seconds(train_start) - checkpoint_s);
  totals.mutable_client_sizes()->Add(sizes.begin(), sizes.end());
  if (stopped_round > 0) totals.set_stopped_round(stopped_round);
  FGL_RETURN_IF_ERROR(CompleteResult(resolved, result));
  return result;
}

}  // namespace

absl::StatusOr<proto::FederationResult> DriveFederation(const ResolvedOptions& o, ServerAlgorithm& server,
                                                        ClientChannel& channel, const DriverHooks& hooks) {
  // `stage` is read when an exception is caught, so the error names what the run was doing.
  std::string stage;
  if (hooks.on_exchange) {
    TappedChannel tapped(channel, hooks.on_exchange);
    return CatchExceptions(stage, [&] { return Drive(o, server, tapped, hooks, &stage); });
  }
  return CatchExceptions(stage, [&] { return Drive(o, server, channel, hooks, &stage); });
}

}  // namespace fgl::fl
