// Planning a table: each cell's experiment resolved, its runs read from their records, and the
// runs that have none queued as Jobs (with the partition spread's further partitions).
#ifndef FGL_EXPERIMENTS_TABLE_PLAN_H_
#define FGL_EXPERIMENTS_TABLE_PLAN_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "experiments/proto/experiment.pb.h"
#include "experiments/proto/record.pb.h"
#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

// One run without a usable record: one seed of one cell's resolved experiment.
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

// A table's cells and their runs: planned from the records (PlanTable), then filled by the runs
// that were missing (RunPending, run_queue.h) and written out (WriteTableReport, table_report.h).
// Jobs point into `results` and `spread`, so a plan is never copied.
struct TablePlan {
  TablePlan() = default;
  TablePlan(const TablePlan&) = delete;
  TablePlan& operator=(const TablePlan&) = delete;

  std::map<std::pair<std::string, std::string>, CellResult> results;  // (row, column) -> cell
  PartitionSpread spread;
  std::vector<Job> pending;  // the runs to make, in the table's cell order, each once
  // Every seed's record of each plotted cell: the figures draw each seed and their mean.
  std::map<std::pair<std::string, std::string>, std::vector<proto::RunRecord>> all_runs;
  // The report's provenance: each filled cell's runs ("row/column/seed s", cache key), the
  // commits and machines of the runs the cells hold, and the filled cells' training seeds.
  std::vector<std::pair<std::string, std::string>> spec_hashes;
  std::set<std::string> commits, machines;
  std::set<std::string> seeds_used;
};

struct PlanOptions {
  std::string table_path;  // named in errors
  std::string data_dir, records, cache;  // absolute data root; run records; result cache
  bool quick = false;        // at most 3 rounds and the first seed of every cell
  bool cached_only = false;  // queue nothing: cells without records read "not run"
  // Queue only these cells' runs (empty: all); the others are filled from their records alone.
  std::vector<std::string> only_columns, only_rows;
  bool run_partition_spread = true;  // false: the spread's further partitions from records alone
};

// Plans every cell of `table` into `plan`: recorded runs are read into their cells, missing ones
// queued in `plan.pending` (their spec files written to the cache), or the cell marked not run,
// data not present or stale. Errors name the cell whose experiment does not resolve.
absl::Status PlanTable(const proto::Table& table, const PlanOptions& options, TablePlan& plan);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_TABLE_PLAN_H_
