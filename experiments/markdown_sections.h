// The sections of a table's Markdown report after the table itself (report.h): agreement,
// averages, gains, partition spread, rounds run and compute. Each is "" when it does not apply.
#ifndef FGL_EXPERIMENTS_MARKDOWN_SECTIONS_H_
#define FGL_EXPERIMENTS_MARKDOWN_SECTIONS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

// A Markdown grid of `header` and `rows` (each: the row label, then one cell per column), split by
// columns into the fewest grids of near-equal column counts whose lines fit in `max_width`
// characters (code points), each grid repeating the label column, so that a wide table reads
// without scrolling. One column per grid where even that does not fit.
std::string MarkdownGrid(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                         size_t max_width = 200);

// How many filled cells the paper prints a value for lie within max(the paper's std,
// agreement_min_points) of its mean (the paper's std alone where the table sets no minimum).
struct AgreementCount {
  int within = 0, filled = 0;
};
AgreementCount CountAgreement(const proto::Table& t,
                              const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// How many filled cells lie within max(the paper's std, agreement_min_points) of its mean.
std::string AgreementSection(const proto::Table& t,
                             const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// The derived "Avg." columns: ours is the mean of the cell means, once every cell it needs is filled.
std::string AveragesSection(const proto::Table& t,
                            const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// Each row's gain over its base row, ours beside the paper's: over FedAvg when the table has a
// "fedavg" row (named by its printed label, e.g. FedMpa's "FedGCN"); over the row without
// `plugin_suffix` for plug-in rows (Table 3's "X_fedtad").
std::string GainSection(const proto::Table& t,
                        const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                        const std::map<std::pair<std::string, std::string>, proto::PublishedValue>& paper,
                        const std::string& plugin_suffix);

// Per (row, column) of the spread rows: the range of the per-partition means (the table's own
// partition and the spread's) beside the paper's ±.
std::string SpreadSection(const proto::Table& t,
                          const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                          const std::map<std::pair<std::string, std::string>, proto::PublishedValue>& paper,
                          const PartitionSpread& spread);

// Where runs stopped early (eval.early_stop): per filled cell whose protocol stops early, the
// rounds its seeds ran. Nothing for tables without early stopping.
std::string RoundsRunSection(const proto::Table& t,
                             const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// What the filled cells cost to compute, from the runs' own logs: the regeneration budget. A run
// read by several columns (Table 7's accuracies, costs and minutes all come from one run) counts
// once, in the first row that reads it.
std::string ComputeLine(const proto::Table& t, const std::map<std::pair<std::string, std::string>, CellResult>& cells);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_MARKDOWN_SECTIONS_H_
