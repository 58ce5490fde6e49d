// Regenerates one paper table: runs every missing cell (all seeds) through //experiments:run in
// parallel subprocesses, caches each run's result by a hash of its resolved spec, seed and result
// version, and writes experiments/reports/<paper>/<table>.{md,csv,svg}.
//
//   bazel run //experiments:fedtad_table2 [-- --quick]
#include <fcntl.h>
#include <google/protobuf/text_format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "experiments/report.h"
#include "experiments/peak_file.h"
#include "experiments/run_scheduling.h"
#include "experiments/spec.h"
#include "fl/registry.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/proto/federation.pb.h"
#include "experiments/proto/record.pb.h"
#include "fl/proto_json.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/io/file.h"
#include "graph/random.h"
#include "nn/cpu_kernels.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, table, "", "Table textproto (experiments/<paper>/<table>.textproto).");
ABSL_FLAG(bool, quick, false, "Smoke test: at most 3 rounds and the first seed of every cell.");
ABSL_FLAG(std::vector<std::string>, only_columns, {},
          "Run only these column keys; other cells are filled from their records alone (as --cached_only).");
ABSL_FLAG(std::vector<std::string>, only_rows, {}, "Run only these row keys (as --only_columns).");
ABSL_FLAG(bool, cached_only, false,
          "Run nothing: report the cells whose every seed is in the result cache, the others as "
          "'not run in this report'.");
ABSL_FLAG(bool, budget, false,
          "Run nothing and write no report: print, per row, the CPU-hours of the recorded runs and an "
          "estimate for the missing ones (the mean wall time of recorded runs of the same method, "
          "dataset and client count, in any table; 'unknown' where there is none).");
ABSL_FLAG(int, budget_time_rounds, 0,
          "With --budget: time this many rounds (first seed, one run at a time) of each configuration "
          "that has no recorded run, and scale them to the configuration's rounds; 0 = do not time.");
ABSL_FLAG(int, jobs, 0, "Runs in parallel (each with one thread); 0 = the core count.");
ABSL_FLAG(double, memory_gb, 0,
          "Memory the runs of this runner may hold at once (GB), by their configurations' recorded "
          "peaks; 0 = 90% of the machine's (MemTotal). A run is also held back while MemAvailable, less "
          "what this runner's runs have yet to grow to their peaks, is below its peak (this sees the "
          "memory other processes, e.g. another runner's runs, hold now, not what they will grow to).");
ABSL_FLAG(bool, run_partition_spread, true,
          "Also run the partition-spread runs (further partition seeds of the spread rows); false: "
          "fill them from their records only, so the table's own cells come first.");
ABSL_FLAG(std::string, budget_runs_out, "",
          "With --budget: also write every run the table uses to this file, one per line: "
          "\"recorded<TAB>key<TAB>wall seconds\" or \"missing<TAB>key<TAB>estimated seconds (-1: unknown)<TAB>"
          "records|timed|unknown\", so "
          "that totals over several tables count a run they share once (//experiments:budget).");
ABSL_FLAG(bool, budget_summary, false,
          "With --budget: print only the table's total as one Markdown row (the //experiments:budget "
          "table).");
ABSL_FLAG(std::string, data_dir, "", "Dataset root; else $FGL_DATA_DIR, else ./data.");
ABSL_FLAG(std::string, cache_dir, "",
          "Result cache; default $FGL_CACHE_DIR/results or ~/.cache/fgl/results.");
ABSL_FLAG(std::string, results_dir, "",
          "Run records (one JSON line per run, what reports are made from); default "
          "<workspace>/experiments/results (quick: <cache>/quick_records).");
ABSL_FLAG(std::string, report_dir, "",
          "Where reports go; default <workspace>/experiments/reports (quick: reports-quick).");
ABSL_FLAG(std::string, run_binary, "experiments/run", "The //experiments:run binary.");
ABSL_FLAG(std::string, code_commit, "",
          "The commit --run_binary was built from, recorded in each new run's record; default the workspace's "
          "HEAD (+dirty), right when the binary is built from the workspace, not for a copy built earlier.");
ABSL_FLAG(double, checkpoint_minutes, 10,
          "Checkpoint each run after the first round that ends this long after its last checkpoint (or its "
          "start), in <cache>/<run>.ckpt: a runner stopped and started again resumes an interrupted run "
          "from its last checkpoint, with the same numbers. 0 = never.");
ABSL_FLAG(absl::Time, stop_by, absl::InfiniteFuture(),
          "Start no run that is not expected to end by this time (RFC 3339, e.g. "
          "2026-11-29T06:10:00Z): its configuration's mean recorded wall time (or committed timing) "
          "must fit in what is left; runs of unknown length are not started. The cells of runs not "
          "started read 'not run'; a later invocation runs them.");
ABSL_FLAG(int, checkpoint_rounds, 0,
          "Also checkpoint every this many rounds; 0 = by --checkpoint_minutes alone.");

extern char** environ;

namespace fgl::experiments {
namespace {

std::string Workspace() {
  const char* w = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (w && *w) return w;
  char buf[4096];
  return getcwd(buf, sizeof(buf)) ? buf : ".";
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  return absl::StrCat(getcwd(buf, sizeof(buf)) ? buf : ".", "/", path);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The standard output of a command (found on PATH), trimmed; empty when it cannot run or fails.
std::string CommandOutput(const std::vector<std::string>& args) {
  char path[] = "/tmp/fgl-table-cmd-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  close(fd);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, path, O_WRONLY | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  std::string out;
  if (posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) out = Slurp(path);
  }
  posix_spawn_file_actions_destroy(&fa);
  std::remove(path);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// A protobuf JSON file (a run's result.json, a run record); false when missing or unreadable, and
// the run is then redone.
bool ReadJson(const std::string& path, google::protobuf::Message* message) {
  const std::string json = Slurp(path);
  if (json.empty()) return false;
  if (absl::Status s = fl::FromJson(json, message, path); !s.ok()) {
    LOG(WARNING) << s;
    return false;
  }
  return true;
}

// The seed_<s> directory a one-seed run wrote under `out_dir`, or "".
std::string SeedDirectory(const std::string& out_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out_dir, ec)) {
    if (entry.is_directory() && absl::StartsWith(entry.path().filename().string(), "seed_")) {
      return entry.path().string();
    }
  }
  return "";
}

// The method's result version as the code has it now ("fedprox@1", "fedavg@1+fedtad@1"), and as a
// record written before versions were recorded reads (every part at version 1).
std::string CurrentVersion(const std::string& method) {
  if (method == "centralized") return "centralized:" + CurrentVersion("fedavg");
  absl::StatusOr<fl::MethodFactories> m = fl::FindMethod(method);
  return m.ok() ? m->version : "";
}
std::string RecordVersion(const proto::RunRecord& record, const std::string& method) {
  if (!record.method_version().empty()) return record.method_version();
  std::vector<std::string> parts = absl::StrSplit(method == "centralized" ? "fedavg" : method, '+');
  for (std::string& p : parts) p += "@1";
  return absl::StrCat(method == "centralized" ? "centralized:" : "", absl::StrJoin(parts, "+"));
}

std::map<std::string, std::vector<double>> FinalReports(const fl::proto::RunResult& result) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, values] : result.final_client_reports()) {
    out[name].assign(values.values().begin(), values.values().end());
  }
  return out;
}

// One finished run's numbers into its cell: the value the table shows, the traffic, the time.
void AddRun(const proto::Table& table, const proto::RunRecord& record, CellResult& r) {
  constexpr double kMiB = 1 << 20;
  const fl::proto::RunResult& result = record.result();
  // Accuracies are percent in the records; a table that compares with printed fractions shows
  // fractions.
  const double accuracy_unit = table.fraction() ? 0.01 : 1.0;
  double value = accuracy_unit * result.test_acc();
  if (r.value == proto::Table::UPLOADED_MIB) value = static_cast<double>(result.bytes_up()) / kMiB;
  if (r.value == proto::Table::GLOBAL_TEST_ACCURACY) value = accuracy_unit * result.global_test_acc();
  if (r.value == proto::Table::TRAINING_MINUTES) value = result.train_s() / 60;
  if (r.value == proto::Table::UPLOADED_TENSOR_MIB) {
    const std::map<std::string, int64_t> by_group(result.uploaded_tensor_bytes_by_group().begin(),
                                                  result.uploaded_tensor_bytes_by_group().end());
    value = static_cast<double>(SelectedTensorBytes(by_group, r.tensor_groups)) / kMiB;
  }
  if (r.value == proto::Table::CLIENT_REPORT) value = ClientReportValue(FinalReports(result), r.report, r.client);
  if (r.value == proto::Table::LAST_ROUND_TIME_SHARE) {
    const auto& s = record.seconds_curve();
    const double total = std::accumulate(s.begin(), s.end(), 0.0);
    value = total > 0 ? 100.0 * s[s.size() - 1] / total : 0.0;
  }
  r.values.push_back(value);
  r.seeds.push_back(record.seed());
  const auto& curve = r.value == proto::Table::GLOBAL_TEST_ACCURACY ? record.global_test_curve() : record.test_curve();
  if (r.curve_sum.size() < static_cast<size_t>(curve.size())) r.curve_sum.resize(curve.size(), 0.0);
  for (int i = 0; i < curve.size(); ++i) r.curve_sum[i] += curve[i];
  ++r.curve_runs;
  r.traffic_mib.push_back(static_cast<double>(result.bytes_up() + result.bytes_down()) / kMiB);
  r.rounds_run.push_back(record.test_curve_size());
  r.run_seconds += result.wall_s();
  r.recorded_runs.emplace_back(record.key(), result.wall_s());
  r.peak_rss_bytes = std::max(r.peak_rss_bytes, record.peak_rss_bytes());
}

// Forgets the runs AddRun gave a cell, which then reads as `state` (not run, stale, no data); a
// cell left "not run" keeps how many seeds it had (AddRun gives one value per run).
void ClearRuns(CellResult& r, CellResult::State state) {
  r.seeds_recorded = state == CellResult::State::kNotRun ? static_cast<int>(r.values.size()) : 0;
  r.state = state;
  r.values.clear();
  r.seeds.clear();
  r.curve_sum.clear();
  r.curve_runs = 0;
  r.traffic_mib.clear();
  r.rounds_run.clear();
  r.run_seconds = 0;
  r.recorded_runs.clear();
  r.peak_rss_bytes = 0;
}

// Per column, every row's mean curve over its seeds (test accuracy; training loss where recorded):
// <stem>_<column>.svg, <stem>_<column>_loss.svg and one <stem>_curves.csv. Returns the markdown
// that shows them.
std::string WriteColumnCurves(const proto::Table& table,
                       const std::map<std::pair<std::string, std::string>, std::vector<proto::RunRecord>>& runs,
                       const std::string& report_dir, const std::string& stem) {
  std::string md = absl::StrCat("\n## Curves (mean over seeds; data: [", stem, "_curves.csv](", stem, "_curves.csv))\n");
  std::ofstream csv(report_dir + "/" + stem + "_curves.csv");
  csv << "row,column,seeds,round,test_acc_mean,loss_mean\n";
  for (const proto::Column& c : table.columns()) {
    // A global-test column (FedEgo Fig. 4 a/c) draws the shared global test graph's curve.
    const bool global = (c.has_value() ? c.value() : table.value()) == proto::Table::GLOBAL_TEST_ACCURACY;
    auto curve = [global](const proto::RunRecord& rec) -> const google::protobuf::RepeatedField<double>& {
      return global ? rec.global_test_curve() : rec.test_curve();
    };
    std::vector<Series> accuracy, loss;
    for (const proto::Row& row : table.rows()) {
      auto it = runs.find({row.key(), c.key()});
      if (it == runs.end() || it->second.empty()) continue;
      const std::vector<proto::RunRecord>& recs = it->second;
      size_t rounds = curve(recs[0]).size();
      bool has_loss = true;
      for (const proto::RunRecord& rec : recs) {
        rounds = std::min<size_t>(rounds, curve(rec).size());
        has_loss &= rec.loss_curve_size() == rec.test_curve_size();
      }
      Series a{row.label().empty() ? row.key() : row.label(), {}}, l{a.label, {}};
      for (size_t i = 0; i < rounds; ++i) {
        double acc = 0, lo = 0;
        for (const proto::RunRecord& rec : recs) {
          acc += curve(rec)[i] / recs.size();
          if (has_loss) lo += rec.loss_curve(i) / recs.size();
        }
        a.points.emplace_back(i + 1, acc);
        if (has_loss) l.points.emplace_back(i + 1, lo);
        csv << row.key() << "," << c.key() << "," << recs.size() << "," << i + 1 << ","
            << absl::StrFormat("%.4f", acc) << "," << (has_loss ? absl::StrFormat("%.6g", lo) : "") << "\n";
      }
      accuracy.push_back(std::move(a));
      if (has_loss) loss.push_back(std::move(l));
    }
    if (accuracy.empty()) continue;
    const std::string label = c.label().empty() ? c.key() : c.label();
    const std::string name = absl::StrCat(stem, "_", c.key());
    std::ofstream(absl::StrCat(report_dir, "/", name, ".svg"))
        << AccuracySvg(absl::StrCat(label, global ? ": global test" : ": test", " accuracy (mean over seeds)"), accuracy);
    absl::StrAppend(&md, "\n### ", label, "\n\n![", label, global ? " global" : "", " test accuracy](", name, ".svg)\n");
    if (!loss.empty()) {
      std::ofstream(absl::StrCat(report_dir, "/", name, "_loss.svg"))
          << CurveSvg(absl::StrCat(label, ": training loss (mean over seeds)"), loss, /*percent=*/false);
      absl::StrAppend(&md, "![", label, " training loss](", name, "_loss.svg)\n");
    }
  }
  return md;
}

// A run's record from its result.json and rounds.jsonl.
absl::StatusOr<proto::RunRecord> MakeRecord(const std::string& key, const proto::Experiment& resolved, uint64_t seed,
                                           fl::proto::RunResult result, const std::string& rounds_path) {
  proto::RunRecord record;
  record.set_key(key);
  record.set_result_version(kResultVersion);
  record.set_spec(KeyedSpecText(resolved));
  record.set_seed(seed);
  record.set_method_version(CurrentVersion(resolved.method()));
  result.clear_spec();
  *record.mutable_result() = std::move(result);
  std::istringstream lines(Slurp(rounds_path));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    fl::proto::RoundRecord round;
    FGL_RETURN_IF_ERROR(fl::FromJson(line, &round, rounds_path));
    if (round.round() != record.test_curve_size() + 1) {
      return absl::DataLossError(absl::StrCat(rounds_path, ": round ", round.round(), " out of order"));
    }
    record.add_val_curve(round.val_acc());
    record.add_test_curve(round.test_acc());
    if (round.has_global_test_acc()) record.add_global_test_curve(round.global_test_acc());
    if (round.has_train_loss()) record.add_loss_curve(round.train_loss());
    record.add_seconds_curve(round.seconds());
    if (resolved.eval().has_early_stop() && round.has_test_loss()) record.add_test_loss_curve(round.test_loss());
  }
  return record;
}

// One line of protobuf JSON at `path`, written atomically (a temporary file, then a rename).
absl::Status WriteRecord(const std::string& path, const google::protobuf::Message& record) {
  const std::string tmp = absl::StrCat(path, ".", getpid(), ".tmp");  // one per writing process
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << fl::ToJsonLine(record) << "\n";
    out.close();
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

struct Job {
  std::string cell_key, spec_path, out_dir, record_path, log_path;
  proto::Experiment resolved;  // this run's, one seed
  uint64_t seed = 0;
  // The cells (or partition-spread entries) it fills: two cells of a table can be the same run.
  std::vector<CellResult*> targets;
  std::pair<std::string, std::string> cell;  // (row, column), for logs and the plot
  bool plot = false;             // a main cell: its first run may be plotted
  pid_t pid = 0;
  int64_t expected_peak = 0;     // bytes of memory counted for it while it runs
  std::string checkpoint_dir;    // <cache>/<run>.ckpt: checkpoint.pb and peak_rss_bytes (run_main.cc)
};

pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// The configuration key of a run for the budget: "method|dataset|clients|model", the model with
// its dropout rates blanked ("dropout=*", also input_/attn_/prop_dropout): they barely change what
// a run costs (a rate of exactly 0 skips the mask, a little cheaper), and FedMpa's Fig. 3 sweeps
// them. Other model options do matter (nFedGNN's GAT runs cost ten times its GCN runs).
std::string CostKey(const std::string& method, const std::string& dataset, int clients, const std::string& model) {
  static const std::regex kDropout("dropout=[^,;]*");
  return absl::StrCat(method, "|", dataset, "|", clients, "|", std::regex_replace(model, kDropout, "dropout=*"));
}

std::string BudgetKey(const proto::Experiment& e) { return CostKey(e.method(), e.dataset(), e.clients(), e.model()); }

// What the recorded runs of one configuration (BudgetKey) cost: mean wall seconds, and the
// largest peak resident set of those that measured it (0 when none did).
struct RecordedCost {
  double wall_s = 0;
  int64_t peak_rss_bytes = 0;
};

std::map<std::string, RecordedCost> RecordedCosts(const std::string& records) {
  std::map<std::string, std::pair<double, int>> sums;
  std::map<std::string, RecordedCost> costs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(records, ec)) {
    proto::RunRecord record;
    if (entry.path().extension() != ".json" || !ReadJson(entry.path().string(), &record)) continue;
    const fl::proto::RunResult& r = record.result();
    const std::string key = CostKey(r.method(), r.dataset(), r.clients(), r.model());
    auto& [sum, n] = sums[key];
    // An early-stopped run's time scaled to all its rounds: the estimate is for a run that goes
    // the distance (one that stops early costs less).
    sum += r.stopped_round() > 0 ? r.wall_s() * r.rounds() / r.stopped_round() : r.wall_s();
    ++n;
    costs[key].peak_rss_bytes = std::max(costs[key].peak_rss_bytes, record.peak_rss_bytes());
  }
  for (const auto& [key, sn] : sums) costs[key].wall_s = sn.first / sn.second;
  return costs;
}

// For a configuration with neither records nor a timing: the recorded configuration of the same
// method, dataset and model at the nearest client count (the larger on a tie), as its CostKey;
// nullopt when there is none. A rough figure (FedSage+ on CS costs 3,100 s a run with 5 clients
// and 2,100 s with 10), so the budget labels what rests on it.
std::optional<std::string> NeighbourCostKey(const std::map<std::string, RecordedCost>& costs,
                                            const proto::Experiment& e) {
  const std::vector<std::string> want = absl::StrSplit(BudgetKey(e), absl::MaxSplits('|', 3));
  CHECK_EQ(want.size(), 4u) << "a CostKey has four parts";
  std::optional<std::string> best;
  int best_distance = 0, best_clients = 0;
  for (const auto& [key, cost] : costs) {
    const std::vector<std::string> parts = absl::StrSplit(key, absl::MaxSplits('|', 3));
    int clients = 0;
    if (parts.size() != 4 || parts[0] != want[0] || parts[1] != want[1] ||
        parts[3] != want[3] || !absl::SimpleAtoi(parts[2], &clients) || clients == e.clients() ||
        !(cost.wall_s > 0)) {
      continue;
    }
    const int distance = std::abs(clients - e.clients());
    if (!best || distance < best_distance || (distance == best_distance && clients > best_clients)) {
      best = key;
      best_distance = distance;
      best_clients = clients;
    }
  }
  return best;
}

// A process's resident set now (/proc/<pid>/statm), 0 when it cannot be read.
int64_t ResidentBytes(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/statm"));
  int64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * sysconf(_SC_PAGESIZE);
}

// Whether `checkpoint_dir` holds a checkpoint this runner may resume, and the stamp it writes
// there: the checkpoint must come from the same result and method versions (a change of numerics
// bumps one of them; a fingerprint alone would not see it), and a checkpoint that two runs in a
// row could not get past (an out-of-memory kill while resuming, a crash) is dropped.
std::string CheckpointStamp(const proto::Experiment& resolved) {
  return absl::StrCat(kResultVersion, " ", CurrentVersion(resolved.method()));
}

bool UsableCheckpoint(const std::string& dir, const std::string& stamp) {
  const std::string ckpt = dir + "/checkpoint.pb";
  if (!graph::io::FileExists(ckpt)) return false;
  std::error_code ec;
  auto drop = [&](const std::string& why) {
    LOG(WARNING) << "dropping " << ckpt << ": " << why;
    std::filesystem::remove_all(dir, ec);
    return false;
  };
  if (Slurp(dir + "/stamp") != stamp) return drop(absl::StrCat("not of this code's versions (", stamp, ")"));
  // Resumptions of this very file (its size and modification time): a third one is not tried.
  const auto written = std::filesystem::last_write_time(ckpt, ec).time_since_epoch().count();
  const std::string identity = absl::StrCat(std::filesystem::file_size(ckpt, ec), " ", written);
  std::istringstream tried(Slurp(dir + "/resumes"));
  std::string size, time;
  int count = 0;
  if (!(tried >> size >> time >> count) || absl::StrCat(size, " ", time) != identity) count = 0;
  if (count >= 2) return drop("two runs resumed from it and neither wrote a later checkpoint");
  std::ofstream(dir + "/resumes", std::ios::trunc) << identity << " " << count + 1 << "\n";
  return true;
}

// A field of /proc/meminfo in bytes ("MemTotal", "MemAvailable"); 0 when it cannot be read.
int64_t MemInfoBytes(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (!absl::StartsWith(line, field + ":")) continue;
    std::istringstream fields(line.substr(field.size() + 1));
    int64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}

// A timing's file name under <records>/timings: the FNV-1a-64 of its configuration key.
std::string TimingFileStem(const std::string& key) {
  return absl::StrFormat("%016x", graph::Fnv1a64(key.data(), key.size()));
}

// Times `rounds` rounds of one run of `job` and scales them to its full rounds: loading and
// partitioning once, plus the per-round training time. nullopt when the run failed.
std::optional<proto::BudgetTiming> TimedEstimate(const Job& job, int rounds, const std::string& run_binary,
                                                 const std::string& cache) {
  proto::Experiment short_run = job.resolved;
  const int full = short_run.rounds();
  short_run.set_rounds(std::min(rounds, full));
  const std::string stem = absl::StrCat(cache, "/budget_", job.cell_key);
  std::string text;
  google::protobuf::TextFormat::PrintToString(short_run, &text);
  std::ofstream(stem + ".spec.textproto") << text;
  std::error_code ec;
  std::filesystem::remove_all(stem + ".out", ec);  // an older timing's seed directory
  const pid_t pid = Spawn({run_binary, "--spec=" + stem + ".spec.textproto", "--threads=1", "--out=" + stem + ".out"},
                          stem + ".log");
  int status = 0;
  struct rusage usage {};
  if (pid <= 0 || wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return std::nullopt;
  }
  fl::proto::RunResult result;
  const std::string dir = SeedDirectory(stem + ".out");
  if (dir.empty() || !ReadJson(dir + "/result.json", &result) || result.train_s() < 0 ||
      result.wall_s() < result.train_s()) {
    return std::nullopt;
  }
  proto::BudgetTiming timing;
  timing.set_key(BudgetKey(job.resolved));
  // An early-stopped timing run trained fewer rounds than it was given.
  timing.set_rounds_timed(result.stopped_round() > 0 ? std::min(result.stopped_round(), short_run.rounds())
                                                     : short_run.rounds());
  timing.set_rounds(full);
  timing.set_load_s(result.wall_s() - result.train_s());
  timing.set_train_s(result.train_s());
  timing.set_estimate_s(timing.load_s() + timing.train_s() * full / timing.rounds_timed());
  timing.set_peak_rss_bytes(static_cast<int64_t>(usage.ru_maxrss) * 1024);
  return timing;
}

// The committed timings (`records`/timings/*.json) by configuration key. Files that do not parse
// (ReadJson warns; an empty file is skipped silently) or whose name is not their key's hash are
// skipped.
std::map<std::string, proto::BudgetTiming> CommittedTimings(const std::string& records) {
  std::map<std::string, proto::BudgetTiming> timings;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(records + "/timings", ec)) {
    proto::BudgetTiming timing;
    if (entry.path().extension() != ".json" || !ReadJson(entry.path().string(), &timing)) continue;
    if (entry.path().stem().string() != TimingFileStem(timing.key()) || timing.rounds_timed() <= 0 ||
        !std::isfinite(timing.load_s()) || !std::isfinite(timing.train_s()) || timing.load_s() < 0 ||
        timing.train_s() < 0) {
      LOG(WARNING) << entry.path().string() << ": not a timing of its configuration (key \"" << timing.key()
                   << "\", rounds_timed " << timing.rounds_timed() << ", load_s " << timing.load_s() << ", train_s "
                   << timing.train_s() << "); ignored";
      continue;
    }
    timings[timing.key()] = timing;
  }
  return timings;
}

absl::StatusOr<std::string> Budget(const proto::Table& table, const std::string& table_name,
                   const std::map<std::pair<std::string, std::string>, CellResult>& results,
                   const PartitionSpread& spread, const std::vector<Job>& pending, const std::string& records,
                   const std::string& run_binary, const std::string& cache, const std::string& commit,
                   const std::string& machine) {
  const std::map<std::string, RecordedCost> costs = RecordedCosts(records);
  std::map<std::string, double> wall;
  for (const auto& [key, cost] : costs) wall[key] = cost.wall_s;
  // Configurations without a record: committed timings, then (with --budget_time_rounds) new ones,
  // committed beside the records.
  std::map<std::string, proto::BudgetTiming> timings = CommittedTimings(records);
  if (const int rounds = absl::GetFlag(FLAGS_budget_time_rounds); rounds > 0) {
    std::set<std::string> tried;  // a configuration whose timing failed is not tried again
    for (const Job& j : pending) {
      const std::string key = BudgetKey(j.resolved);
      if (wall.count(key) || timings.count(key) || !tried.insert(key).second) continue;
      std::cerr << "timing " << rounds << " rounds of " << key << "\n";
      std::optional<proto::BudgetTiming> timing = TimedEstimate(j, rounds, run_binary, cache);
      if (!timing) {
        std::cerr << "  failed (log: " << cache << "/budget_" << j.cell_key << ".log)\n";
        continue;
      }
      timing->set_code_commit(commit);
      timing->set_machine(machine);
      const std::time_t now = std::time(nullptr);
      char date[16];
      std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
      timing->set_measured_on(date);
      std::cerr << absl::StrFormat("  %.0f s a run (%d rounds in %.1f s, %.1f s loading)\n", timing->estimate_s(),
                                   timing->rounds_timed(), timing->train_s(), timing->load_s());
      const std::string dir = records + "/timings";
      if (absl::Status s = graph::io::MakeDirs(dir); !s.ok()) LOG(ERROR) << s;
      if (absl::Status s = WriteRecord(absl::StrCat(dir, "/", TimingFileStem(key), ".json"), *timing); !s.ok()) {
        LOG(ERROR) << s;
      }
      timings[key] = *timing;
    }
  }
  // Each missing run's estimated seconds, once: the mean of its configuration's records, else its
  // timing scaled to this run's own rounds, else the records of the nearest client count
  // (NeighbourCostKey); no seconds when none exists. `source` says which.
  enum class Source { kUnknown, kRecords, kTiming, kNeighbour };
  struct Estimate {
    std::optional<double> seconds;
    Source source = Source::kUnknown;
  };
  std::vector<Estimate> estimates(pending.size());
  std::set<std::string> timed_used;                 // the timed configurations the estimate rests on
  std::map<std::string, std::string> neighbours;  // configuration -> the configuration it was priced as
  for (size_t i = 0; i < pending.size(); ++i) {
    const proto::Experiment& e = pending[i].resolved;
    const std::string key = BudgetKey(e);
    Estimate& est = estimates[i];
    if (auto it = wall.find(key); it != wall.end()) {
      est = {it->second, Source::kRecords};
    } else if (auto t = timings.find(key); t != timings.end()) {
      est = {t->second.load_s() + t->second.train_s() * e.rounds() / t->second.rounds_timed(), Source::kTiming};
      timed_used.insert(key);
    } else if (auto n = neighbours.find(key); n != neighbours.end()) {
      est = {wall.at(n->second), Source::kNeighbour};
    } else if (const std::optional<std::string> neighbour = NeighbourCostKey(costs, e)) {
      est = {wall.at(*neighbour), Source::kNeighbour};
      neighbours[key] = *neighbour;
    }
  }
  struct RowBudget {
    int recorded = 0, missing = 0, unknown = 0;
    int spread_missing = 0;       // of `missing`: further partitions of spread rows, not cells
    double recorded_s = 0, missing_s = 0;
    double timed_s = 0;           // the part of missing_s from timed rounds (no record yet)
    double neighbour_s = 0;       // the part of missing_s from another client count's records
    int filled = 0, present = 0;  // cells: every run recorded / the data is on this machine
    int64_t peak_rss_bytes = 0;   // the largest recorded peak of the row's configurations
  };
  std::map<std::string, RowBudget> rows;
  std::set<const CellResult*> waiting;  // cells with a run missing (a run may serve several)
  for (const Job& j : pending) waiting.insert(j.targets.begin(), j.targets.end());
  for (const auto& [key, r] : results) {
    if (r.state == CellResult::State::kDataNotPresent || r.state == CellResult::State::kNotPrinted) continue;
    RowBudget& b = rows[key.first];
    ++b.present;
    b.filled += r.state == CellResult::State::kDone && !waiting.count(&r);
  }
  std::set<std::string> counted;  // a run read by several columns counts once, in the first row that reads it
  auto count = [&](const std::string& row, const CellResult& r) {
    const RunCost cost = UncountedRuns(r, counted);
    rows[row].recorded += cost.runs;
    rows[row].recorded_s += cost.seconds;
    rows[row].peak_rss_bytes = std::max(rows[row].peak_rss_bytes, r.peak_rss_bytes);
  };
  for (const auto& [key, r] : results) count(key.first, r);
  for (const auto& [key, by_seed] : spread) {
    for (const auto& [seed, r] : by_seed) count(key.first, r);
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    const Job& j = pending[i];
    const Estimate& est = estimates[i];
    RowBudget& b = rows[j.cell.first];
    ++b.missing;
    b.spread_missing += !j.plot;  // only the main cells' runs are plotted
    if (!est.seconds) {
      ++b.unknown;
    } else {
      b.missing_s += *est.seconds;
      if (est.source == Source::kTiming) b.timed_s += *est.seconds;
      if (est.source == Source::kNeighbour) b.neighbour_s += *est.seconds;
    }
  }
  // "12.34 (3.10 from timed rounds, 1.20 from other client counts) + 5 runs unknown"
  auto estimate = [](const RowBudget& b) {
    std::vector<std::string> parts;
    if (b.timed_s > 0) parts.push_back(absl::StrFormat("%.2f from timed rounds", b.timed_s / 3600));
    if (b.neighbour_s > 0) parts.push_back(absl::StrFormat("%.2f from other client counts", b.neighbour_s / 3600));
    return absl::StrCat(absl::StrFormat("%.2f", b.missing_s / 3600),
                        parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")"),
                        b.unknown ? absl::StrFormat(" + %d runs unknown", b.unknown) : "");
  };
  if (const std::string path = absl::GetFlag(FLAGS_budget_runs_out); !path.empty()) {
    std::ofstream runs(path, std::ios::trunc);
    auto recorded = [&](const CellResult& r) {
      for (const auto& [key, seconds] : r.recorded_runs) {
        runs << "recorded\t" << key << "\t" << absl::StrFormat("%.3f", seconds) << "\n";
      }
    };
    for (const auto& [key, r] : results) recorded(r);
    for (const auto& [key, by_seed] : spread) {
      for (const auto& [seed, r] : by_seed) recorded(r);
    }
    for (size_t i = 0; i < pending.size(); ++i) {
      const Job& j = pending[i];
      const Estimate& est = estimates[i];
      runs << "missing\t" << j.cell_key << "\t" << absl::StrFormat("%.3f", est.seconds.value_or(-1)) << "\t"
           << (est.source == Source::kUnknown  ? "unknown"
               : est.source == Source::kTiming ? "timed"
               : est.source == Source::kNeighbour ? "other_clients"
                                                  : "records")
           << "\t" << (j.plot ? "cell" : "spread") << "\n";
    }
    runs.close();
    if (!runs) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  }
  // "18 (18 partition spread)": lanes run with --run_partition_spread=false leave those.
  auto missing_runs = [](const RowBudget& b) {
    return b.spread_missing > 0 ? absl::StrFormat("%d (%d partition spread)", b.missing, b.spread_missing)
                                : absl::StrCat(b.missing);
  };
  auto gb = [](int64_t bytes) { return bytes > 0 ? absl::StrFormat("%.1f", bytes / 1e9) : std::string("–"); };
  std::string out = absl::StrCat("## ", table.id(), "\n\n| row | cells filled / present | runs recorded | CPU-h recorded | ",
                                 "runs missing | CPU-h missing (estimated) | peak GB (recorded) |\n",
                                 "|---|---|---|---|---|---|---|\n");
  RowBudget total;
  for (const proto::Row& row : table.rows()) {
    auto it = rows.find(row.key());
    if (it == rows.end()) continue;
    const RowBudget& b = it->second;
    absl::StrAppend(&out, absl::StrFormat("| %s | %d / %d | %d | %.2f | %s | %s | %s |\n", row.key(), b.filled,
                                          b.present, b.recorded, b.recorded_s / 3600, missing_runs(b), estimate(b),
                                          gb(b.peak_rss_bytes)));
    total.peak_rss_bytes = std::max(total.peak_rss_bytes, b.peak_rss_bytes);
    total.recorded += b.recorded;
    total.recorded_s += b.recorded_s;
    total.missing += b.missing;
    total.spread_missing += b.spread_missing;
    total.missing_s += b.missing_s;
    total.timed_s += b.timed_s;
    total.neighbour_s += b.neighbour_s;
    total.unknown += b.unknown;
    total.filled += b.filled;
    total.present += b.present;
  }
  const std::string total_cells =
      absl::StrFormat("%d / %d | %d | %.2f | %s | %s | %s |", total.filled, total.present, total.recorded,
                      total.recorded_s / 3600, missing_runs(total), estimate(total), gb(total.peak_rss_bytes));
  if (absl::GetFlag(FLAGS_budget_summary)) return absl::StrCat("| `", table_name, "` | ", total_cells, "\n");
  absl::StrAppend(&out, "| **total** | ", total_cells, "\n\n");
  if (!timed_used.empty()) {
    absl::StrAppend(&out, "Estimated from timed rounds (", records, "/timings, not from records): ",
                    absl::StrJoin(timed_used, ", "), ".\n\n");
  }
  if (!neighbours.empty()) {
    absl::StrAppend(&out, "Estimated from the records of another client count (no record or timing of their own): ",
                    absl::StrJoin(neighbours, ", ",
                                  [](std::string* o, const auto& n) { absl::StrAppend(o, n.first, " as ", n.second); }),
                    ".\n\n");
  }
  return out;
}

int Run() {
  const std::string table_path = absl::GetFlag(FLAGS_table);
  absl::StatusOr<proto::Table> table = LoadTable(table_path);
  if (!table.ok()) {
    LOG(ERROR) << table.status();
    return 1;
  }
  const bool quick = absl::GetFlag(FLAGS_quick);
  const std::string data_dir = Absolute(graph::ResolveDataDir(absl::GetFlag(FLAGS_data_dir)));
  std::string cache = absl::GetFlag(FLAGS_cache_dir);
  if (cache.empty()) {
    const char* c = std::getenv("FGL_CACHE_DIR");
    const char* home = std::getenv("HOME");
    cache = c && *c ? absl::StrCat(c, "/results") : absl::StrCat(home ? home : "/tmp", "/.cache/fgl/results");
  }
  if (absl::Status s = graph::io::MakeDirs(cache); !s.ok()) {
    LOG(ERROR) << s;
    return 1;
  }
  std::string records = absl::GetFlag(FLAGS_results_dir);
  if (records.empty()) {
    records = quick ? absl::StrCat(cache, "/quick_records") : absl::StrCat(Workspace(), "/experiments/results");
  }
  if (absl::Status s = graph::io::MakeDirs(records); !s.ok()) {
    LOG(ERROR) << s;
    return 1;
  }
  const std::string run_binary = Absolute(absl::GetFlag(FLAGS_run_binary));
  // experiments/<paper>/<table>.textproto -> reports/<paper>/<table>.*
  const size_t slash = table_path.find_last_of('/');
  const std::string stem = table_path.substr(slash + 1, table_path.rfind('.') - slash - 1);
  const std::string parent = table_path.substr(0, slash);
  const std::string paper = parent.substr(parent.find_last_of('/') + 1);
  std::string report_dir = absl::GetFlag(FLAGS_report_dir);
  if (report_dir.empty()) {
    report_dir = absl::StrCat(Workspace(), "/experiments/", quick ? "reports-quick" : "reports");
  }
  report_dir = absl::StrCat(report_dir, "/", paper);
  if (absl::Status s = graph::io::MakeDirs(report_dir); !s.ok()) {
    LOG(ERROR) << s;
    return 1;
  }

  std::map<std::pair<std::string, std::string>, CellResult> results;
  std::map<std::pair<std::string, std::string>, proto::RunRecord> first_runs;  // for the plot
  std::map<std::pair<std::string, std::string>, std::vector<proto::RunRecord>> all_runs;  // for curves
  std::vector<Job> pending;
  Provenance prov;
  // The commit and machine that produce new runs (recorded in each run's record).
  std::string commit = absl::GetFlag(FLAGS_code_commit);
  if (commit.empty()) {
    commit = CommandOutput({"git", "-C", Workspace(), "rev-parse", "--short", "HEAD"});
    if (commit.empty()) commit = "unknown";
    if (!CommandOutput({"git", "-C", Workspace(), "status", "--porcelain", "--untracked-files=no"}).empty()) {
      commit += "+dirty";
    }
  }
  struct utsname u;
  uname(&u);
  // The CPU model too: the same kernels ran FedEgo's Cora runs 2-3x slower on one EPYC than on
  // another (nn/cpu_kernels.h), and the kernel release does not tell the hosts apart.
  const std::string cpu = nn::CpuModel();
  const std::string machine =
      absl::StrCat(u.machine, " ", std::thread::hardware_concurrency(), " cores", cpu.empty() ? "" : " (" + cpu + ")",
                   ", ", u.sysname, " ", u.release, ", ", nn::CpuKernels());
  std::set<std::string> commits, machines;
  std::set<std::string> seeds_used;
  // The runs of one resolved experiment into `r`: recorded ones are read, missing ones queued
  // (or the cell marked not run / data not present / stale). Returns its runs' cache keys.
  std::map<std::pair<std::string, std::string>, std::map<uint64_t, CellResult>> spread;
  std::map<std::string, size_t> queued;  // cache key -> index in `pending`
  auto plan = [&](const proto::Experiment& resolved, const std::pair<std::string, std::string>& key, CellResult& r,
                  bool plot, bool cached_only) {
    std::vector<std::pair<std::string, std::string>> cell_hashes;
    const bool data_present = graph::DatasetPresent(resolved.dataset(), data_dir);
    // Reads the record of `seed`'s run into `record`; true when it serves this cell (`stale`: it
    // names the run but an older method version).
    auto usable_record = [&](uint64_t seed, const std::string& hash, proto::RunRecord& record, bool& stale) {
      // A record counts only for the run it names: its key, seed and spec text must all match.
      bool have = ReadJson(absl::StrCat(records, "/", hash, ".json"), &record) && record.key() == hash &&
                  record.seed() == seed && record.spec() == KeyedSpecText(resolved);
      stale = have && RecordVersion(record, resolved.method()) != CurrentVersion(resolved.method());
      have &= !stale;
      // A time share needs the per-round seconds that older records lack: such a run is redone
      // (same numbers, the curve added).
      if (r.value == proto::Table::LAST_ROUND_TIME_SHARE &&
          (record.seconds_curve_size() == 0 || record.seconds_curve_size() != record.test_curve_size() ||
           std::accumulate(record.seconds_curve().begin(), record.seconds_curve().end(), 0.0) <= 0)) {
        have = false;
      }
      // Likewise the uploaded tensors' bytes, counted since 2026-11-24.
      if (r.value == proto::Table::UPLOADED_TENSOR_MIB && !record.result().has_uploaded_tensor_bytes()) have = false;
      if (r.value == proto::Table::CLIENT_REPORT && !std::isfinite(ClientReportValue(FinalReports(record.result()), r.report, r.client))) {
        have = false;
      }
      return have;
    };
    r.seeds_wanted = resolved.seeds_size();
    for (int s = 0; s < resolved.seeds_size(); ++s) {
      const uint64_t seed = resolved.seeds(s);
      const std::string hash = ResultCacheKey(resolved, seed, kResultVersion);
      cell_hashes.emplace_back(absl::StrCat(key.first, "/", key.second, "/seed ", seed), hash);
      Job job;
      job.cell_key = hash;
      job.record_path = absl::StrCat(records, "/", hash, ".json");
      proto::RunRecord record;
      bool stale = false;
      const bool have = usable_record(seed, hash, record, stale);
      if (have) {
        commits.insert(record.result().code_commit().empty() ? "unknown" : record.result().code_commit());
        machines.insert(record.result().machine().empty() ? "unknown" : record.result().machine());
        AddRun(*table, record, r);
        if (plot && !first_runs.count(key)) first_runs[key] = record;
        if (plot) all_runs[key].push_back(record);
        continue;
      }
      if (cached_only || !data_present) {
        ClearRuns(r, !data_present ? CellResult::State::kDataNotPresent
                     : stale       ? CellResult::State::kStale
                                   : CellResult::State::kNotRun);
        // Say how far its seeds have come: those before this one are counted, the rest are read.
        for (int rest = s + 1; r.state == CellResult::State::kNotRun && rest < resolved.seeds_size(); ++rest) {
          proto::RunRecord other;
          bool other_stale = false;
          const uint64_t other_seed = resolved.seeds(rest);
          r.seeds_recorded +=
              usable_record(other_seed, ResultCacheKey(resolved, other_seed, kResultVersion), other, other_stale);
        }
        if (plot) first_runs.erase(key);
        if (plot) all_runs.erase(key);
        break;
      }
      if (auto it = queued.find(hash); it != queued.end()) {  // the same run, already queued
        pending[it->second].targets.push_back(&r);
        continue;
      }
      proto::Experiment one = resolved;
      one.clear_seeds();
      one.add_seeds(seed);
      job.spec_path = absl::StrCat(cache, "/", hash, ".spec.textproto");
      job.out_dir = absl::StrCat(cache, "/", hash, ".out");
      job.log_path = absl::StrCat(cache, "/", hash, ".log");
      job.checkpoint_dir = absl::StrCat(cache, "/", hash, ".ckpt");
      std::string spec_text;
      google::protobuf::TextFormat::PrintToString(one, &spec_text);
      std::ofstream(job.spec_path) << spec_text;
      job.targets = {&r};
      job.cell = key;
      job.plot = plot;
      job.resolved = one;
      job.seed = seed;
      queued[hash] = pending.size();
      pending.push_back(job);
    }
    return cell_hashes;
  };
  for (const proto::Cell& cell : table->cells()) {
    const auto key = std::make_pair(cell.row(), cell.column());
    CellResult& r = results[key];
    r.value = table->value();
    for (const proto::Column& c : table->columns()) {
      if (c.key() == cell.column() && c.has_value()) r.value = c.value();
      if (c.key() == cell.column()) {
        r.tensor_groups.assign(c.tensor_groups().begin(), c.tensor_groups().end());
        r.report = c.report();
        r.client = c.has_client() ? c.client() : -1;
      }
    }
    absl::StatusOr<proto::Experiment> exp = CellExperiment(*table, cell);
    if (!exp.ok()) {
      LOG(ERROR) << exp.status();
      return 1;
    }
    exp->set_data_dir(data_dir);
    const std::string where = absl::StrCat(table_path, " cell (", cell.row(), ", ", cell.column(), ")");
    absl::StatusOr<proto::Experiment> resolved = Resolve(*exp, where);
    if (!resolved.ok()) {
      LOG(ERROR) << resolved.status();
      return 1;
    }
    if (quick) {
      resolved->set_rounds(std::min(resolved->rounds(), 3));
      if (resolved->seeds_size() > 1) resolved->mutable_seeds()->Truncate(1);
    }
    r.protocol = ProtocolCard(*resolved);
    r.params = MethodParamsText(*resolved);
    if (quick) r.protocol += " (QUICK: 3 rounds, first seed; not a reproduction)";
    const std::vector<std::string> only_columns = absl::GetFlag(FLAGS_only_columns);
    const std::vector<std::string> only_rows = absl::GetFlag(FLAGS_only_rows);
    auto excluded = [](const std::vector<std::string>& only, const std::string& key) {
      return !only.empty() && std::find(only.begin(), only.end(), key) == only.end();
    };
    // Cells outside --only_rows/--only_columns are not run, but their records still fill the
    // report, which thus equals what --cached_only regenerates.
    const bool cached_only = absl::GetFlag(FLAGS_cached_only) || excluded(only_columns, cell.column()) ||
                             excluded(only_rows, cell.row());
    if (GetMethodStatus(resolved->method()) != MethodStatus::kImplemented ||
        !ModelImplemented(resolved->model())) {
      r.state = CellResult::State::kNotImplemented;
      continue;
    }
    // A cell whose runs are all recorded needs no data: reports regenerate from records alone.
    r.state = CellResult::State::kDone;
    const std::vector<std::pair<std::string, std::string>> cell_hashes = plan(*resolved, key, r, true, cached_only);
    if (r.state == CellResult::State::kDone) {
      prov.spec_hashes.insert(prov.spec_hashes.end(), cell_hashes.begin(), cell_hashes.end());
      for (uint64_t seed : resolved->seeds()) seeds_used.insert(std::to_string(seed));
    }
    // The partition spread: the same cell on further partitions (training seeds unchanged).
    const auto& spread_rows = table->partition_spread().rows();
    if (std::find(spread_rows.begin(), spread_rows.end(), cell.row()) == spread_rows.end()) continue;
    for (uint64_t partition_seed : table->partition_spread().partition_seeds()) {
      if (partition_seed == resolved->partition_seed()) continue;  // the cell itself
      proto::Experiment other = *exp;
      other.set_partition_seed(partition_seed);
      absl::StatusOr<proto::Experiment> moved = Resolve(other, where);
      if (!moved.ok()) {
        LOG(ERROR) << moved.status();
        return 1;
      }
      if (quick) {
        moved->set_rounds(std::min(moved->rounds(), 3));
        if (moved->seeds_size() > 1) moved->mutable_seeds()->Truncate(1);
      }
      CellResult& s = spread[key][partition_seed];
      s.state = CellResult::State::kDone;
      plan(*moved, key, s, false, cached_only || !absl::GetFlag(FLAGS_run_partition_spread));
    }
  }

  if (absl::GetFlag(FLAGS_budget)) {
    absl::StatusOr<std::string> budget = Budget(*table, absl::StrCat(paper, "/", stem), results, spread, pending,
                                                records, run_binary, cache, commit, machine);
    if (!budget.ok()) {
      LOG(ERROR) << budget.status();
      return 1;
    }
    std::cout << *budget;
    return 0;
  }

  // Run what is missing, `jobs` at a time, with a progress line and ETA on stderr. Runs that start
  // together must fit in memory at their peaks: each is expected to peak as the largest recorded
  // run of its configuration (unknown: 0), and a run waits while those running would not leave it
  // room, or while the machine has less available than it needs (runs of another runner). The
  // first waiting run that fits goes next; with nothing running, the next run starts regardless.
  const size_t total = pending.size();
  size_t done = 0;
  int failed = 0;
  std::map<pid_t, Job> running;
  const int jobs = absl::GetFlag(FLAGS_jobs) > 0
                       ? absl::GetFlag(FLAGS_jobs)
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int64_t memory_limit = absl::GetFlag(FLAGS_memory_gb) > 0
                                   ? static_cast<int64_t>(absl::GetFlag(FLAGS_memory_gb) * 1e9)
                                   : MemInfoBytes("MemTotal") / 10 * 9;
  std::map<std::string, int64_t> expected_peak;
  std::map<std::string, double> expected_wall;  // seconds per run, for the checkpoint interval
  if (total > 0) {
    for (const auto& [key, cost] : RecordedCosts(records)) {
      expected_peak[key] = cost.peak_rss_bytes;
      expected_wall[key] = cost.wall_s;
    }
    // A configuration without a record: its timing run's peak (a few rounds, so a lower bound).
    for (const auto& [key, timing] : CommittedTimings(records)) {
      expected_peak.emplace(key, timing.peak_rss_bytes());
      expected_wall.emplace(key, timing.estimate_s());
    }
  }
  auto peak_of = [&](const Job& j) {
    auto it = expected_peak.find(BudgetKey(j.resolved));
    return it == expected_peak.end() ? int64_t{0} : it->second;
  };
  std::vector<size_t> waiting(total);
  std::iota(waiting.begin(), waiting.end(), 0);
  int64_t running_peaks = 0;
  const auto runs_start = std::chrono::steady_clock::now();
  // Runs that would not end by --stop_by leave the queue for good (time only moves on).
  const absl::Time stop_by = absl::GetFlag(FLAGS_stop_by);
  const int checkpoint_rounds = absl::GetFlag(FLAGS_checkpoint_rounds);
  const double checkpoint_minutes = absl::GetFlag(FLAGS_checkpoint_minutes);
  size_t not_started = 0;
  std::set<CellResult*> cut;  // cells with a run not started
  auto drop_late_runs = [&] {
    if (stop_by == absl::InfiniteFuture()) return;
    const double left = absl::ToDoubleSeconds(stop_by - absl::Now());
    for (auto it = waiting.begin(); it != waiting.end();) {
      const Job& j = pending[*it];
      auto wall = expected_wall.find(BudgetKey(j.resolved));
      const std::optional<double> expected =
          wall == expected_wall.end() ? std::nullopt : std::optional<double>(wall->second);
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
      std::vector<std::string> args = {run_binary, "--spec=" + j.spec_path, "--threads=1", "--out=" + j.out_dir};
      // An interrupted run resumes from its checkpoint whether or not this one would write them.
      const std::string stamp = CheckpointStamp(j.resolved);
      const bool resumable = UsableCheckpoint(j.checkpoint_dir, stamp);
      if (checkpoint_rounds > 0 || checkpoint_minutes > 0 || resumable) {
        if (absl::Status made = graph::io::MakeDirs(j.checkpoint_dir); !made.ok()) {
          LOG(WARNING) << "no checkpoints for " << j.cell.first << "/" << j.cell.second << ": " << made;
        } else {
          std::ofstream(j.checkpoint_dir + "/stamp", std::ios::trunc) << stamp;
          args.insert(args.end(), {"--checkpoint_dir=" + j.checkpoint_dir,
                                   absl::StrCat("--checkpoint_every=", checkpoint_rounds),
                                   absl::StrCat("--checkpoint_minutes=", checkpoint_minutes), "--resume"});
        }
        if (resumable) {
          LOG(INFO) << "resuming " << j.cell.first << "/" << j.cell.second << " seed " << j.seed << " from "
                    << j.checkpoint_dir << "/checkpoint.pb";
        }
      }
      j.pid = Spawn(args, j.log_path);
      if (j.pid <= 0) {
        LOG(ERROR) << "cannot start " << run_binary;
        return 1;
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
      if (absl::Status s = record.ok() ? WriteRecord(j.record_path, *record) : record.status(); !s.ok()) {
        LOG(ERROR) << s;
        return 1;
      }
      commits.insert(commit);
      machines.insert(machine);
      std::filesystem::remove_all(j.checkpoint_dir, ec);
      for (CellResult* r : j.targets) AddRun(*table, *record, *r);
      if (j.plot && !first_runs.count(j.cell)) first_runs[j.cell] = *record;
      if (j.plot) all_runs[j.cell].push_back(*record);
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
  // A cell with a run not started reads as --cached_only would show it: not run, no values, no curve.
  for (CellResult* r : cut) {
    if (r->state != CellResult::State::kFailed) ClearRuns(*r, CellResult::State::kNotRun);
  }
  for (auto& [cell, r] : results) {
    if (!cut.count(&r)) continue;
    first_runs.erase(cell);
    all_runs.erase(cell);
    const std::string label = absl::StrCat(cell.first, "/", cell.second, "/seed ");
    auto& hashes = prov.spec_hashes;
    hashes.erase(std::remove_if(hashes.begin(), hashes.end(),
                                [&](const auto& h) { return absl::StartsWith(h.first, label); }),
                 hashes.end());
  }
  if (not_started > 0) {
    LOG(WARNING) << not_started << " of " << total << " runs not started: not expected to end by --stop_by "
                 << absl::FormatTime(stop_by);
  }

  // The plot: every row's first-seed curve on the first column with a finished cell.
  std::vector<Series> series;
  std::string plot_column;
  for (const proto::Column& c : table->columns()) {
    for (const proto::Row& row : table->rows()) {
      auto it = first_runs.find({row.key(), c.key()});
      if (it == first_runs.end()) continue;
      plot_column = c.label().empty() ? c.key() : c.label();
      Series s;
      s.label = row.label().empty() ? row.key() : row.label();
      for (int i = 0; i < it->second.test_curve_size(); ++i) s.points.emplace_back(i + 1, it->second.test_curve(i));
      series.push_back(std::move(s));
    }
    if (!series.empty()) break;
  }
  const std::string curves_md = table->curves_per_column() ? WriteColumnCurves(*table, all_runs, report_dir, stem) : "";
  std::string svg_name;
  if (!series.empty()) {
    svg_name = stem + ".svg";
    std::ofstream(report_dir + "/" + svg_name)
        << AccuracySvg(absl::StrCat(table->title(), " — test accuracy per round, ", plot_column,
                                    " (first seed)"), series);
  }
  prov.seeds = absl::StrJoin(seeds_used, ", ");
  prov.commits = absl::StrJoin(commits, ", ");
  prov.machines = absl::StrJoin(machines, "; ");
  std::string grid_md;
  if (const std::string grid = table->grid_heatmap() ? GridHeatmapSvg(*table, results) : ""; !grid.empty()) {
    std::ofstream(report_dir + "/" + stem + "_grid.svg") << grid;
    grid_md = absl::StrCat("\n![", table->title(), ": the cells as a grid](", stem, "_grid.svg)\n");
  }
  std::string fidelity_name;
  if (const std::string fidelity = table->value() == proto::Table::TEST_ACCURACY ? FidelitySvg(*table, results) : "";
      !fidelity.empty()) {
    fidelity_name = stem + "_fidelity.svg";
    std::ofstream(report_dir + "/" + fidelity_name) << fidelity;
  }
  std::ofstream(report_dir + "/" + stem + ".md")
      << MarkdownReport(*table, results, prov, svg_name, fidelity_name, spread) << grid_md << curves_md;
  std::ofstream(report_dir + "/" + stem + ".csv") << CsvReport(*table, results);
  std::cout << "wrote " << report_dir << "/" << stem << ".{md,csv" << (svg_name.empty() ? "" : ",svg") << "}"
            << " (" << total << " runs, " << failed << " failed)" << std::endl;
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace fgl::experiments

int main(int argc, char** argv) {
  // The runs it starts inherit the pinned kernels (and record them with the machine).
  fgl::nn::PinCpuKernels(argv);
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return fgl::experiments::Run();
}
