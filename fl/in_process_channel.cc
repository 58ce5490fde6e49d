#include "fl/in_process_channel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fl/catch_exceptions.h"
#include "fl/evaluation.h"
#include "fl/phase_profile.h"
#include "fl/round_schedule.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

// Parses a serialised message, as a receiver would.
absl::StatusOr<proto::Message> Receive(const std::string& bytes, const std::string& what) {
  proto::Message m;
  if (!m.ParseFromString(bytes)) return absl::DataLossError(absl::StrCat("cannot parse ", what));
  return m;
}

// What arrives at the other end, and its serialised size. The message itself is handed over:
// serialising and parsing it back would give the same message (maps aside, whose order is
// unspecified either way) at the cost of three copies of every tensor, and FedSage+'s NeighGen
// messages are 280 MB each on Coauthor-CS. A message protobuf cannot serialise (2 GB and over)
// fails here as it would on the wire.
absl::StatusOr<proto::Message> Send(proto::Message m, int64_t& bytes, const std::string& what) {
  const size_t size = m.ByteSizeLong();
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot send ", what, ": ", size, " bytes exceed protobuf's 2 GB message limit"));
  }
  bytes = static_cast<int64_t>(size);
  return m;
}

// The broadcast as the client sees it: the server's message itself where the task carries it (it
// is shared and read-only), else parsed from its bytes.
absl::StatusOr<std::shared_ptr<const proto::Message>> Received(const SharedMessage& m) {
  if (m.message != nullptr) {
    // SharedMessage::Of serialises to "" what protobuf cannot (2 GB and over).
    if (m.bytes != nullptr && m.bytes->empty() && m.message->ByteSizeLong() > 0) {
      return absl::ResourceExhaustedError(absl::StrCat("cannot receive the broadcast: ", m.message->ByteSizeLong(),
                                                       " bytes exceed protobuf's 2 GB message limit"));
    }
    return m.message;
  }
  if (m.bytes == nullptr) return absl::InvalidArgumentError("a training task without a message");
  FGL_ASSIGN_OR_RETURN(proto::Message parsed, Receive(*m.bytes, "broadcast"));
  return std::make_shared<const proto::Message>(std::move(parsed));
}

}  // namespace

InProcessChannel::InProcessChannel(const FederationOptions& o, std::vector<std::shared_ptr<ClientData>> data,
                                   std::vector<std::unique_ptr<ClientAlgorithm>> algorithms)
    : options_(o), data_(std::move(data)), algorithms_(std::move(algorithms)) {}

std::vector<int> InProcessChannel::Reachable() {
  std::vector<int> all(num_clients());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

ClientAnswer InProcessChannel::Run(int k, const ClientTask& task) {
  const auto start = std::chrono::steady_clock::now();
  ClientAlgorithm& algorithm = *algorithms_[k];
  ClientAnswer a;
  if (task.eval_round > 0) {
    // Seeded per client and round, so dropout at evaluation does not depend on the thread.
    ScopedPhase phase("rounds/client evaluate");
    a.eval = CatchExceptions(absl::StrCat("round ", task.eval_round, ": client ", k, " evaluation"), [&] {
      return EvaluateClient(algorithm, *data_[k], task.eval_model.message.get(), ServerRound(options_, task.eval_round));
    });
    if (a.eval->ok()) a.eval_reports = ReportsOf(algorithm);
  }
  switch (task.kind) {
    case ClientTask::Kind::kEvaluate:
      a.status = absl::OkStatus();
      break;
    case ClientTask::Kind::kPrepare: {
      ScopedPhase phase("rounds/client preparation");
      a.status = CatchExceptions(absl::StrCat("preparation: client ", k), [&]() -> absl::Status {
        PreparingClient* const preparing = algorithm.preparing();
        if (preparing == nullptr) return absl::OkStatus();  // nothing to send
        FGL_ASSIGN_OR_RETURN(proto::Message prepared, preparing->Prepare());
        FGL_ASSIGN_OR_RETURN(a.reply, Send(std::move(prepared), a.bytes_up, "preparation"));
        return absl::OkStatus();
      });
      break;
    }
    case ClientTask::Kind::kTrain: {
      ScopedPhase phase("rounds/client train");
      a.bytes_down = task.message.size();
      a.status = CatchExceptions(absl::StrCat("round ", task.round, ": client ", k, " training"), [&]() -> absl::Status {
        FGL_ASSIGN_OR_RETURN(const std::shared_ptr<const proto::Message> received, Received(task.message));
        FGL_ASSIGN_OR_RETURN(proto::Message reply,
                             algorithm.Train(*received, ClientRound(ServerRound(options_, task.round, task.exchange), k)));
        FGL_ASSIGN_OR_RETURN(a.reply, Send(std::move(reply), a.bytes_up, "reply"));
        a.reports = ReportsOf(algorithm);
        return absl::OkStatus();
      });
      break;
    }
  }
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return a;
}

void InProcessChannel::Exchange(const std::map<int, ClientTask>& tasks,
                                const std::function<void(int, ClientAnswer&)>& on_answer) {
  std::vector<std::pair<int, const ClientTask*>> work;
  for (const auto& [k, task] : tasks) work.emplace_back(k, &task);
  const int n = static_cast<int>(work.size());
  std::vector<ClientAnswer> answers(n);
  // Clients work on the pool. This thread takes each answer as soon as it and every answer before
  // it are in (client-id order: aggregation is deterministic), so aggregation overlaps the last
  // clients' training and an answer lives only until it is taken.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<char> done(n, 0);
  auto run = [&](int i) {
    answers[i] = Run(work[i].first, *work[i].second);
    {
      std::lock_guard<std::mutex> lock(mu);
      done[i] = 1;
    }
    cv.notify_one();
  };
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  // Joins the workers however this scope is left (an exception must not meet joinable threads).
  struct JoinAll {
    std::vector<std::thread>& threads;
    ~JoinAll() {
      for (std::thread& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } join_all{pool};
  const int workers = std::max(1, options_.threads);
  if (workers > 1) {
    for (int w = 0; w < std::min(workers, n); ++w) {
      pool.emplace_back([&] {
        for (int i = next++; i < n; i = next++) run(i);
      });
    }
  }
  for (int i = 0; i < n; ++i) {
    if (pool.empty()) run(i);  // one worker: this thread, one client at a time
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done[i] != 0; });
    }
    on_answer(work[i].first, answers[i]);
    answers[i] = ClientAnswer();
  }
}

absl::Status InProcessChannel::SaveClients(CheckpointWriter& checkpoint) {
  for (const auto& a : algorithms_) {  // one client's state in memory at a time
    FGL_ASSIGN_OR_RETURN(proto::Message state, a->SaveState());
    FGL_RETURN_IF_ERROR(checkpoint.AddClientState(state));
  }
  return absl::OkStatus();
}

absl::Status InProcessChannel::RestoreClients(CheckpointReader& checkpoint) {
  for (int k = 0; k < num_clients(); ++k) {
    FGL_ASSIGN_OR_RETURN(proto::Message state, checkpoint.NextClientState());
    FGL_RETURN_IF_ERROR(algorithms_[k]->RestoreState(state));
  }
  if (!checkpoint.AtEnd()) {
    return absl::DataLossError(absl::StrCat("checkpoint holds more client states than the run's ", num_clients(), " clients"));
  }
  return absl::OkStatus();
}

}  // namespace fgl::fl
