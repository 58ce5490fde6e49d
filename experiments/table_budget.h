// A table's compute budget (--budget): per row, the cells filled, the runs and CPU-hours already
// recorded, and an estimate for the missing runs. Runs nothing unless asked to time rounds.
#ifndef FGL_EXPERIMENTS_TABLE_BUDGET_H_
#define FGL_EXPERIMENTS_TABLE_BUDGET_H_

#include <string>

#include "absl/status/statusor.h"
#include "experiments/proto/table.pb.h"
#include "experiments/table_plan.h"

namespace fgl::experiments {

struct BudgetOptions {
  // Time this many rounds of each configuration that has neither records nor a committed timing
  // (first seed, one run at a time), and commit the timing under <records>/timings; 0: do not.
  int time_rounds = 0;
  // Also write every run the table uses to this file, one per line (//experiments:budget sums
  // them over tables, counting a shared run once); "": do not.
  std::string runs_out;
  bool summary = false;  // only the table's total, as one Markdown row
  // For timing runs: the //experiments:run binary, the result cache, and what the timing records
  // as having produced it.
  std::string run_binary, cache, commit, machine;
};

// The budget of `plan` (planned from the records in `records`) as Markdown: a table of its rows
// and a total, then which estimates rest on timed rounds or another client count.
absl::StatusOr<std::string> Budget(const proto::Table& table, const std::string& table_name, const TablePlan& plan,
                                   const std::string& records, const BudgetOptions& options);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_TABLE_BUDGET_H_
