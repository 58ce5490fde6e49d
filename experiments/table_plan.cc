#include "experiments/table_plan.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "experiments/protocol_card.h"
#include "experiments/run_records.h"
#include "experiments/spec.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/io/file.h"

namespace fgl::experiments {
namespace {

// What planning one table reads and fills, cell after cell.
struct Planning {
  const proto::Table& table;
  const PlanOptions& options;
  TablePlan& plan;
  std::map<std::string, size_t> queued = {};  // cache key -> index in `plan.pending`
};

// Reads the record of `seed`'s run of `resolved` into `record`; true when it serves cell `r`
// (`stale`: it names the run but an older method version), false when there is none. A record
// that cannot be read, is damaged, misplaced or out of range is an error naming its file: a report
// must not quietly lose a seed.
absl::StatusOr<bool> UsableRecord(const Planning& p, const proto::Experiment& resolved, const CellResult& r,
                                  uint64_t seed, const std::string& hash, proto::RunRecord& record, bool& stale) {
  stale = false;
  const std::string path = absl::StrCat(p.options.records, "/", hash, ".json");
  absl::StatusOr<proto::RunRecord> read = ReadRunRecord(path);
  if (absl::IsNotFound(read.status())) return false;
  if (!read.ok()) return read.status();
  record = *std::move(read);
  // A record counts only for the run it names: its key, seed and spec text must all match (its
  // key is its file name's and its own spec's, so only a foreign file fails here).
  if (record.key() != hash || record.seed() != seed || record.spec() != KeyedSpecText(resolved)) {
    return absl::DataLossError(absl::StrCat(path, ": not the record of seed ", seed, " of ", KeyedSpecText(resolved)));
  }
  stale = RecordVersion(record, resolved.method()) != CurrentVersion(resolved.method());
  bool have = !stale;
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
}

// The runs of one resolved experiment into `r`: recorded ones are read, missing ones queued
// (or the cell marked not run / data not present / stale). Returns its runs' cache keys.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> PlanRuns(
    Planning& p, const proto::Experiment& resolved, const std::pair<std::string, std::string>& key, CellResult& r,
    bool plot, bool cached_only) {
  TablePlan& plan = p.plan;
  const std::string& cache = p.options.cache;
  std::vector<std::pair<std::string, std::string>> cell_hashes;
  const bool data_present = graph::DatasetPresent(resolved.dataset(), p.options.data_dir);
  r.seeds_wanted = resolved.seeds_size();
  for (int s = 0; s < resolved.seeds_size(); ++s) {
    const uint64_t seed = resolved.seeds(s);
    const std::string hash = ResultCacheKey(resolved, seed, kResultVersion);
    cell_hashes.emplace_back(absl::StrCat(key.first, "/", key.second, "/seed ", seed), hash);
    Job job;
    job.cell_key = hash;
    job.record_path = absl::StrCat(p.options.records, "/", hash, ".json");
    proto::RunRecord record;
    bool stale = false;
    absl::StatusOr<bool> have = UsableRecord(p, resolved, r, seed, hash, record, stale);
    if (!have.ok()) return have.status();
    if (*have) {
      plan.commits.insert(record.result().code_commit().empty() ? "unknown" : record.result().code_commit());
      plan.machines.insert(record.result().machine().empty() ? "unknown" : record.result().machine());
      AddRun(p.table, record, r);
      if (plot) plan.all_runs[key].push_back(record);
      continue;
    }
    if (cached_only || !data_present) {
      // Said in the log as well as in the report, so that a missing seed is never silent.
      LOG(WARNING) << p.options.table_path << " cell (" << key.first << ", " << key.second << "): seed " << seed
                   << (stale ? "'s record is of an older method version" : " has no record") << " ("
                   << job.record_path << "): the cell reads "
                   << (!data_present ? "data not present" : stale ? "stale" : "not run");
      ClearRuns(r, !data_present ? CellResult::State::kDataNotPresent
                   : stale       ? CellResult::State::kStale
                                 : CellResult::State::kNotRun);
      // Say how far its seeds have come: those before this one are counted, the rest are read.
      for (int rest = s + 1; r.state == CellResult::State::kNotRun && rest < resolved.seeds_size(); ++rest) {
        proto::RunRecord other;
        bool other_stale = false;
        const uint64_t other_seed = resolved.seeds(rest);
        absl::StatusOr<bool> usable = UsableRecord(p, resolved, r, other_seed,
                                                   ResultCacheKey(resolved, other_seed, kResultVersion), other,
                                                   other_stale);
        if (!usable.ok()) return usable.status();
        r.seeds_recorded += *usable;
      }
      if (plot) plan.all_runs.erase(key);
      break;
    }
    if (auto it = p.queued.find(hash); it != p.queued.end()) {  // the same run, already queued
      plan.pending[it->second].targets.push_back(&r);
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
    if (absl::Status s = graph::io::WriteFileAtomically(job.spec_path, spec_text); !s.ok()) return s;
    job.targets = {&r};
    job.cell = key;
    job.plot = plot;
    job.resolved = one;
    job.seed = seed;
    p.queued[hash] = plan.pending.size();
    plan.pending.push_back(job);
  }
  return cell_hashes;
}

// Whether `key` is left out by an --only_rows/--only_columns list (empty: nothing is).
bool Excluded(const std::vector<std::string>& only, const std::string& key) {
  return !only.empty() && std::find(only.begin(), only.end(), key) == only.end();
}

absl::Status PlanCell(Planning& p, const proto::Cell& cell) {
  const proto::Table& table = p.table;
  const PlanOptions& options = p.options;
  const auto key = std::make_pair(cell.row(), cell.column());
  CellResult& r = p.plan.results[key];
  r.value = table.value();
  for (const proto::Column& c : table.columns()) {
    if (c.key() == cell.column() && c.has_value()) r.value = c.value();
    if (c.key() == cell.column()) {
      r.tensor_groups.assign(c.tensor_groups().begin(), c.tensor_groups().end());
      r.report = c.report();
      r.client = c.has_client() ? c.client() : -1;
    }
  }
  absl::StatusOr<proto::Experiment> exp = CellExperiment(table, cell);
  if (!exp.ok()) return exp.status();
  exp->set_data_dir(options.data_dir);
  const std::string where = absl::StrCat(options.table_path, " cell (", cell.row(), ", ", cell.column(), ")");
  absl::StatusOr<proto::Experiment> resolved = Resolve(*exp, where);
  if (!resolved.ok()) return resolved.status();
  if (options.quick) {
    resolved->set_rounds(std::min(resolved->rounds(), 3));
    if (resolved->seeds_size() > 1) resolved->mutable_seeds()->Truncate(1);
  }
  r.protocol = ProtocolCard(*resolved);
  r.params = MethodParamsText(*resolved);
  if (options.quick) r.protocol += " (QUICK: 3 rounds, first seed; not a reproduction)";
  // Cells outside --only_rows/--only_columns are not run, but their records still fill the
  // report, which thus equals what --cached_only regenerates.
  const bool cached_only = options.cached_only || Excluded(options.only_columns, cell.column()) ||
                           Excluded(options.only_rows, cell.row());
  // A cell whose runs are all recorded needs no data: reports regenerate from records alone.
  r.state = CellResult::State::kDone;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> cell_hashes =
      PlanRuns(p, *resolved, key, r, true, cached_only);
  if (!cell_hashes.ok()) return cell_hashes.status();
  if (r.state == CellResult::State::kDone) {
    p.plan.spec_hashes.insert(p.plan.spec_hashes.end(), cell_hashes->begin(), cell_hashes->end());
    for (uint64_t seed : resolved->seeds()) p.plan.seeds_used.insert(std::to_string(seed));
  }
  // The partition spread: the same cell on further partitions (training seeds unchanged).
  const auto& spread_rows = table.partition_spread().rows();
  if (std::find(spread_rows.begin(), spread_rows.end(), cell.row()) == spread_rows.end()) return absl::OkStatus();
  for (uint64_t partition_seed : table.partition_spread().partition_seeds()) {
    if (partition_seed == resolved->partition_seed()) continue;  // the cell itself
    proto::Experiment other = *exp;
    other.set_partition_seed(partition_seed);
    absl::StatusOr<proto::Experiment> moved = Resolve(other, where);
    if (!moved.ok()) return moved.status();
    if (options.quick) {
      moved->set_rounds(std::min(moved->rounds(), 3));
      if (moved->seeds_size() > 1) moved->mutable_seeds()->Truncate(1);
    }
    CellResult& s = p.plan.spread[key][partition_seed];
    s.state = CellResult::State::kDone;
    if (absl::StatusOr<std::vector<std::pair<std::string, std::string>>> spread =
            PlanRuns(p, *moved, key, s, false, cached_only || !options.run_partition_spread);
        !spread.ok()) {
      return spread.status();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PlanTable(const proto::Table& table, const PlanOptions& options, TablePlan& plan) {
  Planning planning{table, options, plan};
  for (const proto::Cell& cell : table.cells()) {
    if (absl::Status s = PlanCell(planning, cell); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace fgl::experiments
