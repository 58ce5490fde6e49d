// A table's cells as CSV (<table>.csv): state, our mean and std, runs, and the paper's mean and std.
#ifndef FGL_EXPERIMENTS_CSV_REPORT_H_
#define FGL_EXPERIMENTS_CSV_REPORT_H_

#include <map>
#include <string>
#include <utility>

#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

// One line per cell of `table`, in the table's cell order, after a header line.
std::string CsvReport(const proto::Table& table,
                      const std::map<std::pair<std::string, std::string>, CellResult>& cells);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_CSV_REPORT_H_
