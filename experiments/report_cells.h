// One table cell after its runs (CellResult), how it prints ("ours / the paper's"), and the cell
// lookups that every report writer shares.
#ifndef FGL_EXPERIMENTS_REPORT_CELLS_H_
#define FGL_EXPERIMENTS_REPORT_CELLS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "experiments/proto/table.pb.h"

namespace fgl::experiments {

// What is known about one cell after the runs.
struct CellResult {
  // kNotRun: left out of this report (--only_columns/--only_rows), e.g. for the compute budget.
  // kStale: its only records are of an older method version (--cached_only does not rerun them).
  enum class State { kDone, kNotImplemented, kDataNotPresent, kFailed, kNotPrinted, kNotRun, kStale };
  State state = State::kNotPrinted;
  std::vector<double> values;  // one per seed: percent, or MiB for Table::UPLOADED_MIB
  std::string detail;          // error text for kFailed, missing file for kDataNotPresent
  double run_seconds = 0;      // the runs' own logged wall time, summed over seeds
  // Each recorded run it holds: (record key, its wall seconds), for budget totals over tables.
  std::vector<std::pair<std::string, double>> recorded_runs;
  std::string protocol;        // ProtocolCard of the cell's resolved spec
  std::string params;          // MethodParamsText of it
  std::vector<double> traffic_mib;  // one per seed: MiB up + down
  // What `values` hold: the table's value, or the column's when it sets one.
  proto::Table::Value value = proto::Table::TEST_ACCURACY;
  std::vector<std::string> tensor_groups;  // the column's, for UPLOADED_TENSOR_MIB
  std::string report;                       // the column's, for CLIENT_REPORT
  // Summed over the seeds per round: the test curve, or the global test's for a global column
  // (curve_runs records; PEAK_ROUND_AT_MOST claims read the mean).
  std::vector<double> curve_sum;
  int curve_runs = 0;
  int client = -1;                          // the column's client for CLIENT_REPORT; -1: the mean
  std::vector<int> rounds_run;  // one per seed: its recorded rounds (fewer than the spec's when it stopped early)
  int64_t peak_rss_bytes = 0;   // the largest peak resident set of its runs (0: not measured)
  int seeds_wanted = 0;         // the seeds its spec names
  int seeds_recorded = 0;       // kNotRun: how many of them have a record already
  std::vector<uint64_t> seeds;  // values[i]'s training seed (claims pair cells by it); may be empty
};

// The runs of `cell` not yet in `counted` (record keys; added to it) and their logged wall seconds,
// so that a run read by several columns counts once; a cell without record keys counts its own.
struct RunCost {
  int runs = 0;
  double seconds = 0;
};
RunCost UncountedRuns(const CellResult& cell, std::set<std::string>& counted);

// A column's CLIENT_REPORT value out of one run's final reports: client `client`'s value, or the
// mean over the clients with a finite value (client < 0). NaN when absent.
double ClientReportValue(const std::map<std::string, std::vector<double>>& reports, const std::string& report,
                         int client);

// The bytes of the uploaded tensors of `groups` (Column.tensor_groups: names, or "-name" for all
// but that one; empty: all) out of a run's per-group counts.
int64_t SelectedTensorBytes(const std::map<std::string, int64_t>& by_group, const std::vector<std::string>& groups);

// Whether a value kind is an accuracy (shown as percent or fraction, compared with the paper's).
bool IsAccuracy(proto::Table::Value value);

// A cell as a report's grid prints it: our value (mean ± std over seeds; amounts as the paper
// prints them) or what stands in for it ("no data", "not run", "k of n seeds", "stale",
// "RUN FAILED", "not implemented"; "–" where the table has no such cell), then, where the cell is
// filled and the paper prints a value, the signed difference ours − the paper's in parentheses
// ("77.0 ± 1.0 (+3.4)"), and "†" when `outside_agreement` (the caller applies WithinAgreement).
// `decimals`: of accuracies (3 where the paper prints fractions).
std::string FormatCell(const CellResult& result, const proto::PublishedValue& paper,
                       proto::Table::Value value = proto::Table::TEST_ACCURACY, int decimals = 1,
                       bool outside_agreement = false);
// The paper's value as a grid prints it: "73.6 ± 0.4", "80.6" where it prints no ±, "–" where it
// prints nothing.
std::string PaperValueText(const proto::PublishedValue& paper, proto::Table::Value value = proto::Table::TEST_ACCURACY,
                           int decimals = 1);
// The one agreement rule, shared by every report and the front page (issue #65). An accuracy cell
// agrees when |ours − paper| ≤ max(2 points, 2·√(σ_ours²/n_ours + σ_paper²/n_paper)): the larger
// of a fixed floor and twice the standard error of the difference, with σ the sample std over
// seeds (MeanStd), the paper's σ its printed ± (0 where it prints none) and n_paper
// Table.paper_runs (3 unless the paper says otherwise); in a fraction table 2 points are 0.02.
// Other values (bytes, minutes) keep the table's own band: within the paper's ± or
// agreement_min_points, whichever is larger. `ours` holds one value per seed.
bool WithinAgreement(const proto::Table& t, const proto::PublishedValue& paper, const std::vector<double>& ours);
// Whether reports judge a table's cells by that rule (mark, count): its cells are accuracies, or
// it sets its own band. Byte counts and minutes without one are judged by their claims.
bool AgreementApplies(const proto::Table& t);
// "|ours − paper| ≤ max(2 points, 2 SE)", or the table's own band: the rule in words.
std::string AgreementRuleText(const proto::Table& t);
// Decimals of a table's accuracies: 3 for fractions (Table.fraction), else 1.
int AccuracyDecimals(const proto::Table& t);

// The table's partition-spread runs: (row, column) -> partition seed -> the cell on that partition.
using PartitionSpread = std::map<std::pair<std::string, std::string>, std::map<uint64_t, CellResult>>;

// The mean of `v` and its sample standard deviation (0 for one value).
std::pair<double, double> MeanStd(const std::vector<double>& v);

// The cell at (row, col); an empty one (not printed) where `cells` has none.
const CellResult& Lookup(const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                         const std::string& row, const std::string& col);

// A row's or column's printed label, else its key.
template <typename T>
std::string Label(const T& row_or_column) {
  return row_or_column.label().empty() ? row_or_column.key() : row_or_column.label();
}

// Row `key`'s printed label, else the key.
std::string RowLabel(const proto::Table& t, const std::string& key);

// Our mean of a filled cell; false when the cell is not filled.
bool OurMean(const std::map<std::pair<std::string, std::string>, CellResult>& cells, const std::string& row,
             const std::string& col, double* mean);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_REPORT_CELLS_H_
