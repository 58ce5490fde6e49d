#include "experiments/csv_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fgl::experiments {

std::string CsvReport(const proto::Table& t,
                      const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::string csv = "row,column,state,ours_mean,ours_std,runs,paper_mean,paper_std\n";
  for (const proto::Cell& c : t.cells()) {
    const CellResult& r = Lookup(cells, c.row(), c.column());
    const char* state = r.state == CellResult::State::kDone             ? "done"
                        : r.state == CellResult::State::kNotImplemented ? "not_implemented"
                        : r.state == CellResult::State::kDataNotPresent ? "data_not_present"
                        : r.state == CellResult::State::kFailed         ? "failed"
                        : r.state == CellResult::State::kNotRun         ? "not_run"
                        : r.state == CellResult::State::kStale          ? "stale"
                                                                        : "not_printed";
    std::string mean, std;
    if (r.state == CellResult::State::kDone) {
      auto [m, s] = MeanStd(r.values);
      mean = absl::StrFormat("%.3f", m);
      std = absl::StrFormat("%.3f", s);
    }
    absl::StrAppend(&csv, c.row(), ",", c.column(), ",", state, ",", mean, ",", std, ",",
                    r.values.size(), ",", c.paper().present() ? absl::StrFormat("%.6g", c.paper().mean()) : "",
                    ",", c.paper().present() ? absl::StrFormat("%.6g", c.paper().std()) : "", "\n");
  }
  return csv;
}

}  // namespace fgl::experiments
