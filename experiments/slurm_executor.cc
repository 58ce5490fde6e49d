#include "experiments/slurm_executor.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <google/protobuf/text_format.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "experiments/peak_file.h"
#include "experiments/run_checkpoint.h"
#include "experiments/run_records.h"
#include "experiments/run_scheduling.h"
#include "fl/proto/federation.pb.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "nn/cpu_kernels.h"

extern char** environ;

namespace fgl::experiments {
namespace {

namespace fs = std::filesystem;

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Runs `args` (found on PATH) and returns its standard output; an error with its standard error
// when it cannot start or exits non-zero.
absl::StatusOr<std::string> Capture(const std::vector<std::string>& args) {
  char out_path[] = "/tmp/fgl-slurm-out-XXXXXX";
  char err_path[] = "/tmp/fgl-slurm-err-XXXXXX";
  const int out_fd = mkstemp(out_path);
  const int err_fd = mkstemp(err_path);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  if (out_fd < 0 || err_fd < 0) return absl::InternalError("cannot make a temporary file");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_TRUNC, 0600);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  if (rc == 0) waitpid(pid, &status, 0);
  const std::string out = Slurp(out_path), err = Trimmed(Slurp(err_path));
  std::remove(out_path);
  std::remove(err_path);
  if (rc != 0) return absl::UnavailableError(absl::StrCat("cannot run ", args[0]));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(absl::StrCat(absl::StrJoin(args, " "), " failed: ", err));
  }
  return out;
}

// A value in single quotes for bash.
std::string Quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool IsActive(const std::string& state) {
  static const std::set<std::string> kActive = {"PENDING",    "RUNNING",   "CONFIGURING", "COMPLETING",
                                                "SUSPENDED",  "REQUEUED",  "RESIZING",    "SIGNALING",
                                                "STAGE_OUT",  "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"};
  return kActive.count(state) > 0;
}

// The run's result.json under its run directory, "" when it has none.
std::string ResultPath(const std::string& run_dir) {
  const std::string seed_dir = SeedDirectory(run_dir + "/out");
  if (seed_dir.empty()) return "";
  const std::string path = seed_dir + "/result.json";
  return fs::exists(path) ? path : "";
}

// One submitted run as the executor follows it.
struct Task {
  Job* job = nullptr;
  std::string run_dir, job_id, log;
  int index = 0;
  std::string state = "PENDING";
  bool finished = false;
};

absl::Status WriteText(const std::string& path, const std::string& text) {
  return graph::io::WriteFileAtomically(path, text);
}

// What the task's node is: `uname -m`, its cores, `uname -s -r` and its host name in DIR/node, the
// first CPU's block of /proc/cpuinfo in DIR/cpuinfo (NodeDescription words them).
constexpr char kNodeFiles[] =
    "{ uname -m; getconf _NPROCESSORS_ONLN; uname -s -r; hostname; } > \"$dir/node\" 2>/dev/null || true\n"
    "sed '/^[[:space:]]*$/q' /proc/cpuinfo > \"$dir/cpuinfo\" 2>/dev/null || true\n";

// The node's description as MachineDescription() (runner_environment.h) words a local machine's,
// with the pinned kernels the task inherited from the runner, and the node's name.
std::string NodeDescription(const std::string& run_dir) {
  const std::vector<std::string> node = absl::StrSplit(Trimmed(Slurp(run_dir + "/node")), '\n');
  if (node.size() < 4) return absl::StrCat("slurm node (unknown), ", nn::CpuKernels());
  const std::string cpu = nn::CpuModelFromCpuinfo(Slurp(run_dir + "/cpuinfo"));
  return absl::StrCat(node[0], " ", node[1], " cores", cpu.empty() ? "" : " (" + cpu + ")", ", ", node[2], ", ",
                      nn::CpuKernels(), "; slurm node ", node[3]);
}

// Writes job `j`'s run directory under `slurm_dir` (spec, record path, commit, stamped checkpoint
// directory) and returns it.
absl::StatusOr<std::string> PrepareRunDir(const Job& j, const std::string& slurm_dir, const std::string& commit) {
  const std::string run_dir = absl::StrCat(slurm_dir, "/runs/", j.cell_key);
  const std::string ckpt = run_dir + "/ckpt";
  if (absl::Status s = graph::io::MakeDirs(ckpt); !s.ok()) return s;
  const std::string stamp = CheckpointStamp(j.resolved);
  if (UsableCheckpoint(ckpt, stamp)) {
    LOG(INFO) << "resuming " << j.cell.first << "/" << j.cell.second << " seed " << j.seed << " from " << ckpt
              << "/checkpoint.pb";
  }
  for (const auto& [file, text] : std::vector<std::pair<std::string, std::string>>{
           {"/spec.textproto", Slurp(j.spec_path)},
           {"/record_path", j.record_path + "\n"},
           {"/commit", commit + "\n"},
           {"/ckpt/stamp", stamp}}) {
    if (absl::Status s = WriteText(run_dir + file, text); !s.ok()) return s;
  }
  return run_dir;
}

// `sbatch --parsable [extra_args] script_path`; returns the job id.
absl::StatusOr<std::string> Submit(const std::string& script_path, const std::vector<std::string>& extra_args) {
  std::vector<std::string> args = {"sbatch", "--parsable"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  args.push_back(script_path);
  absl::StatusOr<std::string> printed = Capture(args);
  if (!printed.ok()) return printed.status();
  // --parsable prints "<job id>" or "<job id>;<cluster>".
  const std::string line = Trimmed(*printed);
  const std::string job_id(absl::StripAsciiWhitespace(line.substr(0, line.find(';'))));
  if (job_id.empty()) return absl::UnavailableError(absl::StrCat("sbatch printed no job id for ", script_path));
  return job_id;
}

// The class of `value`: 0 when at most `base`, else how many times `base` is multiplied by `factor`
// to reach it.
int SizeClass(int64_t value, int64_t base, int64_t factor) {
  int c = 0;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (int64_t limit = base; value > limit && limit <= kMax / factor; limit *= factor) ++c;
  return c;
}

}  // namespace

std::vector<ArrayGroup> GroupByResources(const std::vector<TaskRequest>& requests) {
  std::map<std::pair<int, int>, ArrayGroup> groups;
  for (size_t i = 0; i < requests.size(); ++i) {
    const TaskRequest& r = requests[i];
    ArrayGroup& g = groups[{SizeClass(r.mem_mib, kMemoryClassMib, 2), SizeClass(r.time_minutes, kTimeClassMinutes, 4)}];
    g.mem_mib = std::max(g.mem_mib, r.mem_mib);
    g.time_minutes = std::max(g.time_minutes, r.time_minutes);
    g.tasks.push_back(i);
  }
  std::vector<ArrayGroup> out;
  for (auto& [cls, g] : groups) out.push_back(std::move(g));
  return out;
}

int64_t SlurmMemoryMib(int64_t peak_bytes, double default_mem_gb) {
  if (peak_bytes <= 0) return static_cast<int64_t>(std::ceil(default_mem_gb * 1024));
  const double mib = static_cast<double>(peak_bytes) / (1024.0 * 1024.0);
  return static_cast<int64_t>(std::ceil(mib * 1.25 + 512));
}

int64_t SlurmTimeMinutes(std::optional<double> wall_s, double default_time_minutes) {
  if (!wall_s.has_value()) return static_cast<int64_t>(std::ceil(default_time_minutes));
  return static_cast<int64_t>(std::ceil(*wall_s * 1.5 / 60 + 10));
}

std::string BatchScript(const ArrayScript& a) {
  std::string s = "#!/bin/bash\n";
  absl::StrAppend(&s, "# Generated by the fgl table runner (--executor=slurm, experiments/slurm_executor.h): task i\n",
                  "# runs //experiments:run on the i-th run directory below. Resubmit with sbatch to retry.\n");
  absl::StrAppend(&s, "#SBATCH --job-name=", a.job_name, "\n");
  absl::StrAppend(&s, "#SBATCH --array=0-", a.run_dirs.size() - 1,
                  a.max_parallel > 0 ? absl::StrCat("%", a.max_parallel) : "", "\n");
  absl::StrAppend(&s, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n");
  absl::StrAppend(&s, "#SBATCH --mem=", a.mem_mib, "M\n");
  absl::StrAppend(&s, "#SBATCH --time=", a.time_minutes, "\n");
  absl::StrAppend(&s, "#SBATCH --output=", a.log_pattern, "\n");
  if (!a.partition.empty()) absl::StrAppend(&s, "#SBATCH --partition=", a.partition, "\n");
  if (!a.account.empty()) absl::StrAppend(&s, "#SBATCH --account=", a.account, "\n");
  if (!a.qos.empty()) absl::StrAppend(&s, "#SBATCH --qos=", a.qos, "\n");
  if (a.deadline != absl::InfiniteFuture()) {
    absl::StrAppend(&s, "#SBATCH --deadline=", absl::FormatTime("%Y-%m-%dT%H:%M:%S", a.deadline, absl::LocalTimeZone()),
                    "\n");
  }
  absl::StrAppend(&s, "set -euo pipefail\nruns=(\n");
  for (const std::string& d : a.run_dirs) absl::StrAppend(&s, "  ", Quoted(d), "\n");
  absl::StrAppend(&s, ")\ndir=\"${runs[$SLURM_ARRAY_TASK_ID]}\"\n");
  absl::StrAppend(&s, kNodeFiles);
  absl::StrAppend(&s, "exec ", Quoted(a.run_binary), " --spec=\"$dir/spec.textproto\" --threads=1 --out=\"$dir/out\"");
  for (const std::string& arg : a.run_args) absl::StrAppend(&s, " ", arg);
  absl::StrAppend(&s, "\n");
  return s;
}

std::map<int, std::string> ParseTaskStates(const std::string& text, const std::string& job_id) {
  std::map<int, std::string> states;
  const std::string prefix = job_id + "_";
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<std::string> fields = absl::StrSplit(line, absl::ByAnyChar(" |"), absl::SkipEmpty());
    if (fields.size() < 2 || !absl::StartsWith(fields[0], prefix)) continue;
    absl::string_view task = absl::string_view(fields[0]).substr(prefix.size());
    const std::string state = fields[1];
    int index = 0;
    if (absl::SimpleAtoi(task, &index)) {
      states[index] = state;
      continue;
    }
    // A pending range: [0-3,5,7-9%2].
    if (!absl::ConsumePrefix(&task, "[")) continue;
    task = task.substr(0, task.find_first_of("]%"));
    for (absl::string_view part : absl::StrSplit(task, ',', absl::SkipEmpty())) {
      std::vector<absl::string_view> ends = absl::StrSplit(part, '-');
      int first = 0, last = 0;
      if (!absl::SimpleAtoi(ends[0], &first)) continue;
      if (ends.size() < 2 || !absl::SimpleAtoi(ends[1], &last)) last = first;
      for (int i = first; i <= last; ++i) states[i] = state;
    }
  }
  return states;
}

absl::StatusOr<int> CollectSlurmOutputs(const std::string& slurm_dir) {
  const std::string runs = slurm_dir + "/runs";
  std::error_code ec;
  if (!fs::is_directory(runs, ec)) return 0;
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(runs, ec)) {
    if (entry.is_directory()) dirs.push_back(entry.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  int written = 0;
  for (const std::string& dir : dirs) {
    const std::string result_path = ResultPath(dir);
    if (result_path.empty()) continue;
    const std::string key = fs::path(dir).filename().string();
    const std::string record_path = Trimmed(Slurp(dir + "/record_path"));
    if (record_path.empty()) {
      LOG(WARNING) << dir << ": finished run without record_path; left alone";
      continue;
    }
    if (!fs::exists(record_path)) {
      proto::Experiment spec;
      fl::proto::RunResult result;
      if (!google::protobuf::TextFormat::ParseFromString(Slurp(dir + "/spec.textproto"), &spec) ||
          spec.seeds_size() != 1) {
        return absl::DataLossError(absl::StrCat(dir, "/spec.textproto: not a one-seed experiment"));
      }
      if (!ReadJson(result_path, &result)) return absl::DataLossError(absl::StrCat(result_path, ": unreadable"));
      result.set_code_commit(Trimmed(Slurp(dir + "/commit")));
      result.set_machine(NodeDescription(dir));
      const std::string seed_dir = fs::path(result_path).parent_path().string();
      absl::StatusOr<proto::RunRecord> record =
          MakeRecord(key, spec, spec.seeds(0), result, seed_dir + "/rounds.jsonl");
      if (!record.ok()) return record.status();
      record->set_peak_rss_bytes(ReadPeakFile(PeakFilePath(dir + "/ckpt")));
      if (absl::Status s = WriteRunRecord(record_path, *record); !s.ok()) return s;
      ++written;
      LOG(INFO) << "recorded " << record_path << " from " << dir;
    }
    fs::remove_all(dir, ec);
  }
  return written;
}

absl::StatusOr<QueueResult> RunPendingOnSlurm(const proto::Table& table, const QueueOptions& options,
                                              const SlurmOptions& slurm, TablePlan& plan) {
  std::vector<Job>& pending = plan.pending;
  const size_t total = pending.size();
  if (total == 0) return QueueResult{0, 0};
  const ExpectedCosts costs = ReadExpectedCosts(options.records);
  auto wall_of = [&](const Job& j) { return costs.Wall(j.resolved); };

  // Runs already in the queue (an earlier --no_wait) are followed, not submitted again; squeue is
  // asked once per job, not once per run.
  std::map<std::string, absl::StatusOr<std::string>> queue_of_job;
  std::vector<Task> tasks;
  std::vector<Job*> to_submit;
  std::set<CellResult*> cut;  // cells with a run not submitted (--stop_by) or not waited for
  size_t not_started = 0;
  const double left = absl::ToDoubleSeconds(options.stop_by - absl::Now());
  for (Job& j : pending) {
    const std::string run_dir = absl::StrCat(slurm.slurm_dir, "/runs/", j.cell_key);
    std::vector<std::string> submitted = absl::StrSplit(Trimmed(Slurp(run_dir + "/submitted")), ' ');
    if (submitted.size() == 3) {
      auto queued = queue_of_job.find(submitted[0]);
      if (queued == queue_of_job.end()) {
        queued = queue_of_job
                     .emplace(submitted[0], Capture({"squeue", "-h", "-r", "-j", submitted[0], "-o", "%i %T"}))
                     .first;
      }
      int index = 0;
      if (queued->second.ok() && absl::SimpleAtoi(submitted[1], &index) &&
          ParseTaskStates(*queued->second, submitted[0]).count(index)) {
        LOG(INFO) << "already queued: " << j.cell.first << "/" << j.cell.second << " seed " << j.seed << " (job "
                  << submitted[0] << "_" << index << ")";
        tasks.push_back(Task{&j, run_dir, submitted[0], submitted[2], index});
        continue;
      }
    }
    if (options.stop_by != absl::InfiniteFuture() && !FinishesInTime(wall_of(j), left)) {
      const std::optional<double> expected = wall_of(j);
      LOG(INFO) << "not started (--stop_by): " << j.cell.first << "/" << j.cell.second << " seed " << j.seed
                << ", expected " << (expected ? absl::StrFormat("%.0f s", *expected) : std::string("unknown"))
                << " with " << absl::StrFormat("%.0f s", left) << " left";
      cut.insert(j.targets.begin(), j.targets.end());
      ++not_started;
      continue;
    }
    to_submit.push_back(&j);
  }

  if (!to_submit.empty()) {
    // Each run's --mem and --time from its configuration's costs, then one array per class of them.
    std::vector<TaskRequest> requests;
    std::vector<std::string> run_dirs;
    for (Job* j : to_submit) {
      TaskRequest r{SlurmMemoryMib(costs.Peak(j->resolved), slurm.default_mem_gb),
                    SlurmTimeMinutes(wall_of(*j), slurm.default_time_minutes)};
      if (options.stop_by != absl::InfiniteFuture()) {
        r.time_minutes = std::max<int64_t>(1, std::min<int64_t>(r.time_minutes, static_cast<int64_t>(left / 60)));
      }
      requests.push_back(r);
      absl::StatusOr<std::string> run_dir = PrepareRunDir(*j, slurm.slurm_dir, options.commit);
      if (!run_dir.ok()) return run_dir.status();
      run_dirs.push_back(*run_dir);
    }
    ArrayScript a;
    a.job_name = slurm.job_name;
    a.partition = slurm.partition;
    a.account = slurm.account;
    a.qos = slurm.qos;
    a.max_parallel = slurm.max_parallel;
    a.run_binary = options.run_binary;
    a.run_args = {"--checkpoint_dir=\"$dir/ckpt\"", absl::StrCat("--checkpoint_every=", options.checkpoint_rounds),
                  absl::StrCat("--checkpoint_minutes=", options.checkpoint_minutes), "--resume"};
    if (options.stop_by != absl::InfiniteFuture()) a.deadline = options.stop_by;
    const std::string stem = absl::StrCat(table.id().empty() ? "table" : table.id(), "-",
                                          absl::FormatTime("%Y%m%dT%H%M%S", absl::Now(), absl::UTCTimeZone()), "-",
                                          getpid());
    const std::vector<ArrayGroup> groups = GroupByResources(requests);
    for (const ArrayGroup& g : groups) {
      // The classes differ, so no two arrays ask the same --mem and --time.
      const std::string array_dir =
          absl::StrCat(slurm.slurm_dir, "/arrays/", stem, "-", g.mem_mib, "M-", g.time_minutes, "min");
      if (absl::Status s = graph::io::MakeDirs(array_dir); !s.ok()) return s;
      a.mem_mib = g.mem_mib;
      a.time_minutes = g.time_minutes;
      a.log_pattern = array_dir + "/task_%a.log";
      a.run_dirs.clear();
      for (size_t i : g.tasks) a.run_dirs.push_back(run_dirs[i]);
      const std::string script_path = array_dir + "/run.sbatch";
      if (absl::Status s = WriteText(script_path, BatchScript(a)); !s.ok()) return s;
      absl::StatusOr<std::string> job_id = Submit(script_path, slurm.extra_args);
      if (!job_id.ok()) {
        LOG(ERROR) << job_id.status();
        return job_id.status();
      }
      if (absl::Status s = WriteText(array_dir + "/job_id", *job_id + "\n"); !s.ok()) return s;
      for (size_t k = 0; k < g.tasks.size(); ++k) {
        const std::string log = absl::StrCat(array_dir, "/task_", k, ".log");
        if (absl::Status s = WriteText(a.run_dirs[k] + "/submitted", absl::StrCat(*job_id, " ", k, " ", log, "\n"));
            !s.ok()) {
          return s;
        }
        tasks.push_back(Task{to_submit[g.tasks[k]], a.run_dirs[k], *job_id, log, static_cast<int>(k)});
      }
      LOG(INFO) << "submitted job array " << *job_id << ": " << g.tasks.size() << " runs (--mem=" << a.mem_mib
                << "M --time=" << a.time_minutes << " each), script " << script_path;
    }
    if (groups.size() > 1) {
      LOG(INFO) << "submitted " << to_submit.size() << " runs as " << groups.size()
                << " job arrays (one per memory and time class)";
    }
  }

  int failed = 0;
  if (slurm.no_wait) {
    for (const Task& t : tasks) cut.insert(t.job->targets.begin(), t.job->targets.end());
    LOG(INFO) << tasks.size() << " runs in the Slurm queue; collect them later with --executor=slurm (e.g. with "
              << "--cached_only)";
  } else {
    // Wait for every array: a task is finished once it has left squeue (sacct then says how it ended).
    const auto start = std::chrono::steady_clock::now();
    std::map<std::string, int> blind_polls;  // by job: polls in a row where neither squeue nor sacct answered
    while (true) {
      std::set<std::string> job_ids;
      for (const Task& t : tasks) {
        if (!t.finished) job_ids.insert(t.job_id);
      }
      for (const std::string& id : job_ids) {
        absl::StatusOr<std::string> queued = Capture({"squeue", "-h", "-r", "-j", id, "-o", "%i %T"});
        absl::StatusOr<std::string> accounted = Capture({"sacct", "-n", "-P", "-X", "-j", id, "-o", "JobID,State"});
        const std::map<int, std::string> in_queue =
            queued.ok() ? ParseTaskStates(*queued, id) : std::map<int, std::string>{};
        const std::map<int, std::string> in_accounting =
            accounted.ok() ? ParseTaskStates(*accounted, id) : std::map<int, std::string>{};
        int& blind = blind_polls[id];
        blind = queued.ok() || accounted.ok() ? 0 : blind + 1;
        for (Task& t : tasks) {
          if (t.finished || t.job_id != id) continue;
          if (auto it = in_queue.find(t.index); it != in_queue.end()) {
            t.state = it->second;
            continue;
          }
          auto acct = in_accounting.find(t.index);
          if (acct != in_accounting.end() && IsActive(acct->second)) {
            t.state = acct->second;
            continue;
          }
          if (!queued.ok() && acct == in_accounting.end() && blind < 5) continue;  // no answer yet
          t.finished = true;
          if (!ResultPath(t.run_dir).empty()) {
            t.state = "COMPLETED";
          } else {
            t.state = acct != in_accounting.end() ? acct->second : "UNKNOWN (left the queue without a result)";
          }
        }
      }
      size_t done = 0, running = 0, waiting = 0, bad = 0;
      for (const Task& t : tasks) {
        if (t.finished) {
          (t.state == "COMPLETED" ? done : bad) += 1;
        } else {
          (t.state == "RUNNING" ? running : waiting) += 1;
        }
      }
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const size_t ended = done + bad;
      const std::string eta =
          ended > 0 ? absl::StrFormat("%.0fs", elapsed / ended * (tasks.size() - ended)) : std::string("?");
      std::cerr << absl::StrFormat("\r[slurm %zu/%zu] done %zu  running %zu  pending %zu  failed %zu  elapsed %.0fs  ETA %s   ",
                                   ended, tasks.size(), done, running, waiting, bad, elapsed, eta)
                << std::flush;
      if (ended == tasks.size()) break;
      std::this_thread::sleep_for(std::chrono::duration<double>(slurm.poll_seconds));
    }
    std::cerr << "\n";
    absl::StatusOr<int> collected = CollectSlurmOutputs(slurm.slurm_dir);
    if (!collected.ok()) {
      LOG(ERROR) << collected.status();
      return collected.status();
    }
    for (const Task& t : tasks) {
      Job& j = *t.job;
      absl::StatusOr<proto::RunRecord> record =
          t.state == "COMPLETED" ? ReadRunRecord(j.record_path) : absl::NotFoundError("no result");
      if (record.ok()) {
        plan.commits.insert(record->result().code_commit());
        plan.machines.insert(record->result().machine());
        for (CellResult* r : j.targets) AddRun(table, *record, *r);
        if (j.plot) plan.all_runs[j.cell].push_back(*record);
        continue;
      }
      if (!absl::IsNotFound(record.status())) {
        LOG(ERROR) << record.status();
        return record.status();
      }
      for (CellResult* r : j.targets) {
        r->state = CellResult::State::kFailed;
        r->detail = t.log;
      }
      ++failed;
      LOG(ERROR) << "run failed for cell " << j.cell.first << "/" << j.cell.second << " seed " << j.seed
                 << ": Slurm job " << t.job_id << "_" << t.index << " " << t.state << "; log: " << t.log;
    }
  }
  ForgetRunsNotStarted(cut, plan);
  if (not_started > 0) {
    LOG(WARNING) << not_started << " of " << total << " runs not submitted: not expected to end by --stop_by "
                 << absl::FormatTime(options.stop_by);
  }
  return QueueResult{total, failed};
}

}  // namespace fgl::experiments
