#include "experiments/run_queue.h"

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "experiments/peak_file.h"
#include "experiments/run_checkpoint.h"
#include "experiments/run_costs.h"
#include "experiments/run_process.h"
#include "experiments/run_records.h"
#include "experiments/run_scheduling.h"
#include "fl/proto/federation.pb.h"
#include "glog/logging.h"
#include "graph/io/file.h"

namespace fgl::experiments {
namespace {

// The command line of job `j`: with checkpoints when they are asked for or it has one to resume
// (its directory made and stamped), without them when the directory cannot be made.
std::vector<std::string> RunCommand(const Job& j, const QueueOptions& options) {
  std::vector<std::string> args = {options.run_binary, "--spec=" + j.spec_path, "--threads=1", "--out=" + j.out_dir};
  // An interrupted run resumes from its checkpoint whether or not this one would write them.
  const std::string stamp = CheckpointStamp(j.resolved);
  const bool resumable = UsableCheckpoint(j.checkpoint_dir, stamp);
  if (options.checkpoint_rounds > 0 || options.checkpoint_minutes > 0 || resumable) {
    if (absl::Status made = graph::io::MakeDirs(j.checkpoint_dir); !made.ok()) {
      LOG(WARNING) << "no checkpoints for " << j.cell.first << "/" << j.cell.second << ": " << made;
    } else {
      std::ofstream(j.checkpoint_dir + "/stamp", std::ios::trunc) << stamp;
      args.insert(args.end(), {"--checkpoint_dir=" + j.checkpoint_dir,
                               absl::StrCat("--checkpoint_every=", options.checkpoint_rounds),
                               absl::StrCat("--checkpoint_minutes=", options.checkpoint_minutes), "--resume"});
    }
    if (resumable) {
      LOG(INFO) << "resuming " << j.cell.first << "/" << j.cell.second << " seed " << j.seed << " from "
                << j.checkpoint_dir << "/checkpoint.pb";
    }
  }
  return args;
}

}  // namespace

int64_t ExpectedCosts::Peak(const proto::Experiment& e) const {
  auto it = peak_bytes.find(BudgetKey(e));
  return it == peak_bytes.end() ? int64_t{0} : it->second;
}

std::optional<double> ExpectedCosts::Wall(const proto::Experiment& e) const {
  auto it = wall_s.find(BudgetKey(e));
  return it == wall_s.end() ? std::nullopt : std::optional<double>(it->second);
}

ExpectedCosts ReadExpectedCosts(const std::string& records) {
  ExpectedCosts costs;
  for (const auto& [key, cost] : RecordedCosts(records)) {
    costs.peak_bytes[key] = cost.peak_rss_bytes;
    costs.wall_s[key] = cost.wall_s;
  }
  // A configuration without a record: its timing run's (a few rounds, so its peak is a lower bound).
  for (const auto& [key, timing] : CommittedTimings(records)) {
    costs.peak_bytes.emplace(key, timing.peak_rss_bytes());
    costs.wall_s.emplace(key, timing.estimate_s());
  }
  return costs;
}

void ForgetRunsNotStarted(const std::set<CellResult*>& cut, TablePlan& plan) {
  for (CellResult* r : cut) {
    if (r->state != CellResult::State::kFailed) ClearRuns(*r, CellResult::State::kNotRun);
  }
  for (auto& [cell, r] : plan.results) {
    if (!cut.count(&r)) continue;
    plan.all_runs.erase(cell);
    const std::string label = absl::StrCat(cell.first, "/", cell.second, "/seed ");
    auto& hashes = plan.spec_hashes;
    hashes.erase(std::remove_if(hashes.begin(), hashes.end(),
                                [&](const auto& h) { return absl::StartsWith(h.first, label); }),
                 hashes.end());
  }
}

absl::StatusOr<QueueResult> RunPending(const proto::Table& table, const QueueOptions& options, TablePlan& plan) {
  std::vector<Job>& pending = plan.pending;
  const std::string& run_binary = options.run_binary;
  const std::string& commit = options.commit;
  const std::string& machine = options.machine;
  // Run what is missing, `jobs` at a time, with a progress line and ETA on stderr. Runs that start
  // together must fit in memory at their peaks: each is expected to peak as the largest recorded
  // run of its configuration (unknown: 0), and a run waits while those running would not leave it
  // room, or while the machine has less available than it needs (runs of another runner). The
  // first waiting run that fits goes next; with nothing running, the next run starts regardless.
  const size_t total = pending.size();
  size_t done = 0;
  int failed = 0;
  std::map<pid_t, Job> running;
  const int jobs = options.jobs > 0
                       ? options.jobs
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int64_t memory_limit = options.memory_gb > 0
                                   ? static_cast<int64_t>(options.memory_gb * 1e9)
                                   : MemInfoBytes("MemTotal") / 10 * 9;
  ExpectedCosts expected_costs;
  if (total > 0) expected_costs = ReadExpectedCosts(options.records);
  std::map<std::string, int64_t>& expected_peak = expected_costs.peak_bytes;
  auto peak_of = [&](const Job& j) { return expected_costs.Peak(j.resolved); };
  std::vector<size_t> waiting(total);
  std::iota(waiting.begin(), waiting.end(), 0);
  int64_t running_peaks = 0;
  const auto runs_start = std::chrono::steady_clock::now();
  // Runs that would not end by --stop_by leave the queue for good (time only moves on).
  const absl::Time stop_by = options.stop_by;
  size_t not_started = 0;
  std::set<CellResult*> cut;  // cells with a run not started
  auto drop_late_runs = [&] {
    if (stop_by == absl::InfiniteFuture()) return;
    const double left = absl::ToDoubleSeconds(stop_by - absl::Now());
    for (auto it = waiting.begin(); it != waiting.end();) {
      const Job& j = pending[*it];
      const std::optional<double> expected = expected_costs.Wall(j.resolved);
      if (FinishesInTime(expected, left)) {
        ++it;
        continue;
      }
      LOG(INFO) << "not started (--stop_by): " << j.cell.first << "/" << j.cell.second << " seed " << j.seed
                << ", expected " << (expected ? absl::StrFormat("%.0f s", *expected) : std::string("unknown"))
                << " with " << absl::StrFormat("%.0f s", left) << " left";
      cut.insert(j.targets.begin(), j.targets.end());
      ++not_started;
      it = waiting.erase(it);
    }
  };
  while (!waiting.empty() || !running.empty()) {
    drop_late_runs();
    while (!waiting.empty() && static_cast<int>(running.size()) < jobs) {
      std::vector<int64_t> waiting_peaks;
      for (size_t i : waiting) waiting_peaks.push_back(peak_of(pending[i]));
      // What the machine has for a new run: MemAvailable less what this runner's runs have yet
      // to grow to their expected peaks.
      int64_t available = 0;
      if (!running.empty()) {
        available = MemInfoBytes("MemAvailable");
        for (const auto& [pid, r] : running) available -= std::max<int64_t>(0, r.expected_peak - ResidentBytes(pid));
        available = std::max<int64_t>(available, 1);  // 0 would read "unknown"
      }
      const std::optional<size_t> next = NextRunThatFits(waiting_peaks, static_cast<int>(running.size()),
                                                         running_peaks, memory_limit, available);
      if (!next.has_value()) break;  // wait for a running one to finish
      Job& j = pending[waiting[*next]];
      waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(*next));
      const std::vector<std::string> args = RunCommand(j, options);
      j.pid = Spawn(args, j.log_path);
      if (j.pid <= 0) {
        LOG(ERROR) << "cannot start " << run_binary;
        return absl::UnavailableError(absl::StrCat("cannot start ", run_binary));
      }
      j.expected_peak = peak_of(j);
      running_peaks += j.expected_peak;
      running[j.pid] = j;
    }
    int status = 0;
    struct rusage usage {};
    const pid_t pid = wait4(-1, &status, 0, &usage);
    if (pid <= 0) break;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    Job j = it->second;
    running.erase(it);
    std::error_code ec;  // removing a checkpoint directory is best effort
    running_peaks -= j.expected_peak;
    // Its configuration's next runs are expected to peak as high as this one did.
    int64_t& expected = expected_peak[BudgetKey(j.resolved)];
    expected = std::max(expected, int64_t{usage.ru_maxrss} * 1024);
    ++done;
    // run --spec --out=DIR writes DIR/seed_<s>/result.json.
    const std::string seed_dir = SeedDirectory(j.out_dir);
    fl::proto::RunResult result;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !seed_dir.empty() &&
        ReadJson(seed_dir + "/result.json", &result)) {
      result.set_code_commit(commit);
      result.set_machine(machine);
      absl::StatusOr<proto::RunRecord> record =
          MakeRecord(j.cell_key, j.resolved, j.seed, result, seed_dir + "/rounds.jsonl");
      // Linux reports KiB; a resumed run's earlier processes may have peaked higher.
      if (record.ok()) {
        record->set_peak_rss_bytes(std::max(int64_t{usage.ru_maxrss} * 1024, ReadPeakFile(PeakFilePath(j.checkpoint_dir))));
      }
      if (absl::Status s = record.ok() ? WriteRunRecord(j.record_path, *record) : record.status(); !s.ok()) {
        LOG(ERROR) << s;
        return s;
      }
      plan.commits.insert(commit);
      plan.machines.insert(machine);
      std::filesystem::remove_all(j.checkpoint_dir, ec);
      for (CellResult* r : j.targets) AddRun(table, *record, *r);
      if (j.plot) plan.all_runs[j.cell].push_back(*record);
    } else {
      for (CellResult* r : j.targets) {
        r->state = CellResult::State::kFailed;
        r->detail = j.log_path;
      }
      ++failed;
      LOG(ERROR) << "run failed for cell " << j.cell.first << "/" << j.cell.second << "; log: " << j.log_path;
      // A run that exited with an error starts afresh next time (its checkpoint may be the cause);
      // one killed by a signal (the runner stopped, the machine short of memory) keeps it.
      if (WIFEXITED(status) && std::filesystem::remove_all(j.checkpoint_dir, ec) > 0) {
        LOG(ERROR) << "removed its checkpoint " << j.checkpoint_dir;
      }
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - runs_start).count();
    const double eta = elapsed / done * (total - done);
    std::cerr << absl::StrFormat("\r[%zu/%zu] %3.0f%%  elapsed %.0fs  ETA %.0fs   ", done, total,
                                 100.0 * done / total, elapsed, eta) << std::flush;
  }
  if (total > 0) std::cerr << "\n";
  ForgetRunsNotStarted(cut, plan);
  if (not_started > 0) {
    LOG(WARNING) << not_started << " of " << total << " runs not started: not expected to end by --stop_by "
                 << absl::FormatTime(stop_by);
  }
  return QueueResult{total, failed};
}

}  // namespace fgl::experiments
