// Writing a table report: markdown and CSV with our numbers beside the paper's, and an SVG of
// accuracy against round. Reports are built only from logged run results.
#ifndef FGL_EXPERIMENTS_REPORT_H_
#define FGL_EXPERIMENTS_REPORT_H_

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

// How a cell was run, in one line: evaluation protocol, model, split, partitioner, schedule and
// optimiser (dataset and clients are the column's).
std::string ProtocolCard(const proto::Experiment& resolved);
// The method's typed parameters as set, e.g. "fedtad { reliability_noise: 0.1 }"; "" when none.
std::string MethodParamsText(const proto::Experiment& resolved);

// "ours 76.3 ± 0.2 (paper 73.6 ± 0.4, Δ +2.7)"; markers for the other states.
// `decimals`: of accuracies (3 where the paper prints fractions).
std::string FormatCell(const CellResult& result, const proto::PublishedValue& paper,
                       proto::Table::Value value = proto::Table::TEST_ACCURACY, int decimals = 1);
// Decimals of a table's accuracies: 3 for fractions (Table.fraction), else 1.
int AccuracyDecimals(const proto::Table& t);

struct Provenance {
  // Everything here comes from the table and the run records, so that a report regenerates byte
  // for byte from a clone: the commits and machines that produced the records, not today's.
  std::string commits, machines, seeds;
  std::vector<std::pair<std::string, std::string>> spec_hashes;  // cell -> key
};

// The table's partition-spread runs: (row, column) -> partition seed -> the cell on that partition.
using PartitionSpread = std::map<std::pair<std::string, std::string>, std::map<uint64_t, CellResult>>;

// Markdown: title, the table, the protocol card and notes, provenance; `svg_name` is linked if
// non-empty.
std::string MarkdownReport(const proto::Table& table,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                           const Provenance& provenance, const std::string& svg_name,
                           const std::string& fidelity_svg_name = "", const PartitionSpread& spread = {});
std::string CsvReport(const proto::Table& table,
                      const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// Fidelity: our mean against the paper's value, one point per filled cell coloured by row, with the
// diagonal and a ±2-point band; "" when no cell is filled.
std::string FidelitySvg(const proto::Table& table,
                        const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// The cells' means as a heat map, rows by columns, each square labelled with mean ± std ("–"
// where a cell has no result); colours span the filled cells' range. "" when no cell is filled.
std::string GridHeatmapSvg(const proto::Table& table,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// Accuracy (%) against round, one polyline per series; a dependency-free SVG.
struct Series {
  std::string label;
  std::vector<std::pair<int, double>> points;
};
std::string AccuracySvg(const std::string& title, const std::vector<Series>& series);
// Any quantity against round (`percent`: axis in %, capped at 100).
std::string CurveSvg(const std::string& title, const std::vector<Series>& series, bool percent);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_REPORT_H_
