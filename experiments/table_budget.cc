#include "experiments/table_budget.h"

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/proto/record.pb.h"
#include "experiments/report_cells.h"
#include "experiments/run_costs.h"
#include "experiments/run_process.h"
#include "experiments/run_records.h"
#include "glog/logging.h"
#include "graph/io/file.h"

namespace fgl::experiments {
namespace {

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

}  // namespace

absl::StatusOr<std::string> Budget(const proto::Table& table, const std::string& table_name, const TablePlan& plan,
                                   const std::string& records, const BudgetOptions& options) {
  const std::map<std::pair<std::string, std::string>, CellResult>& results = plan.results;
  const PartitionSpread& spread = plan.spread;
  const std::vector<Job>& pending = plan.pending;
  const std::map<std::string, RecordedCost> costs = RecordedCosts(records);
  std::map<std::string, double> wall;
  for (const auto& [key, cost] : costs) wall[key] = cost.wall_s;
  // Configurations without a record: committed timings, then (with --budget_time_rounds) new ones,
  // committed beside the records.
  std::map<std::string, proto::BudgetTiming> timings = CommittedTimings(records);
  if (const int rounds = options.time_rounds; rounds > 0) {
    std::set<std::string> tried;  // a configuration whose timing failed is not tried again
    for (const Job& j : pending) {
      const std::string key = BudgetKey(j.resolved);
      if (wall.count(key) || timings.count(key) || !tried.insert(key).second) continue;
      std::cerr << "timing " << rounds << " rounds of " << key << "\n";
      std::optional<proto::BudgetTiming> timing = TimedEstimate(j, rounds, options.run_binary, options.cache);
      if (!timing) {
        std::cerr << "  failed (log: " << options.cache << "/budget_" << j.cell_key << ".log)\n";
        continue;
      }
      timing->set_code_commit(options.commit);
      timing->set_machine(options.machine);
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
  if (const std::string path = options.runs_out; !path.empty()) {
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
  if (options.summary) return absl::StrCat("| `", table_name, "` | ", total_cells, "\n");
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

}  // namespace fgl::experiments
