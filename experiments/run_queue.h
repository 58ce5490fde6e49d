// Making a planned table's missing runs: `jobs` side by side as //experiments:run subprocesses,
// within memory (run_scheduling.h) and --stop_by, resuming checkpoints, recording each run.
#ifndef FGL_EXPERIMENTS_RUN_QUEUE_H_
#define FGL_EXPERIMENTS_RUN_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "experiments/proto/experiment.pb.h"
#include "experiments/proto/table.pb.h"
#include "experiments/table_plan.h"

namespace fgl::experiments {

struct QueueOptions {
  int jobs = 0;          // runs side by side, each with one thread; 0: the core count
  double memory_gb = 0;  // what the runs may hold at once by their expected peaks; 0: 90% of MemTotal
  // Start no run that its configuration's mean recorded wall time (or committed timing) says would
  // end after this; nor one of unknown length.
  absl::Time stop_by = absl::InfiniteFuture();
  int checkpoint_rounds = 0;      // also checkpoint every this many rounds; 0: by minutes alone
  double checkpoint_minutes = 0;  // checkpoint after the first round this long after the last; 0: never
  std::string records;            // the run records: expected costs are read, new records written
  std::string run_binary;         // the //experiments:run binary
  std::string commit, machine;    // what each new record says produced it
};

// What each configuration (BudgetKey) is expected to cost a run, for both executors: the largest
// recorded peak and the mean recorded wall time, else (no record) its committed timing's (a few
// rounds, so its peak is a lower bound).
struct ExpectedCosts {
  std::map<std::string, int64_t> peak_bytes;
  std::map<std::string, double> wall_s;
  int64_t Peak(const proto::Experiment& e) const;                // 0: unknown
  std::optional<double> Wall(const proto::Experiment& e) const;  // nullopt: unknown
};
ExpectedCosts ReadExpectedCosts(const std::string& records);

struct QueueResult {
  size_t total = 0;  // the runs that were pending
  int failed = 0;    // those that failed (their cells read "RUN FAILED")
};

// Makes every run in `plan.pending`, with a progress line and ETA on stderr, and adds each
// finished run's record to the cells it fills. Runs not started (--stop_by) leave their cells as
// --cached_only shows them: not run, no curve, no spec hashes. Logs what goes wrong (a failed run,
// a run that cannot start, a record that cannot be written); an error status means the runner
// must stop, a failed run does not.
absl::StatusOr<QueueResult> RunPending(const proto::Table& table, const QueueOptions& options, TablePlan& plan);

// Cells with a run not started (--stop_by, a Slurm array not waited for) read as --cached_only would
// show them: not run, no values, no curve and no spec hashes (one with a failed run still reads as
// failed).
void ForgetRunsNotStarted(const std::set<CellResult*>& cut, TablePlan& plan);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_RUN_QUEUE_H_
