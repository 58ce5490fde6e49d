// Writing a planned and run table's report files: <stem>.md and .csv, the accuracy plot, the
// fidelity and grid figures, and per-column curves where the table asks for them.
#ifndef FGL_EXPERIMENTS_TABLE_REPORT_H_
#define FGL_EXPERIMENTS_TABLE_REPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "experiments/proto/table.pb.h"
#include "experiments/table_plan.h"

namespace fgl::experiments {

// Writes the report of `plan` under `report_dir` as <stem>.*, each file replaced at once; true when
// it drew the accuracy plot <stem>.svg (every row's first-seed curve on the first column with a
// finished cell). A file that cannot be written is an error naming it.
absl::StatusOr<bool> WriteTableReport(const proto::Table& table, const TablePlan& plan, const std::string& report_dir,
                                      const std::string& stem);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_TABLE_REPORT_H_
