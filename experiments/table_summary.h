// What a table comes to, shared by the head of its report (report.h) and the front page's verdict
// block (front_page.h): its claims counted by outcome, its cells filled and within the agreement
// rule, the datasets not present, and its key gain (ours beside the paper's, per column, with
// paired-seed intervals).
#ifndef FGL_EXPERIMENTS_TABLE_SUMMARY_H_
#define FGL_EXPERIMENTS_TABLE_SUMMARY_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/claims.h"
#include "experiments/paired_interval.h"
#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

using Cells = std::map<std::pair<std::string, std::string>, CellResult>;

// How a table's claims came out: "2 reproduced, 1 not reproduced, 0 inconclusive; 1 not checkable";
// "no claims" for none.
std::string ClaimCounts(const std::vector<ClaimJudgement>& judged);

// Cells filled (every seed recorded) of those whose data is present (as the budget counts them).
struct Fill {
  int filled = 0, present = 0;
};
Fill FillOf(const Cells& cells);

// "k of n filled cells ..." under the table's agreement rule (WithinAgreement); "" where the rule
// does not apply (AgreementApplies) or no cell is filled.
std::string AgreementText(const proto::Table& t, const Cells& cells);

// The datasets of the columns with a cell whose data is not on this machine:
// "`ogbn_arxiv` (arXiv 5, arXiv 10)"; "" when every dataset is present.
std::string MissingDatasets(const proto::Table& t, const Cells& cells);

// "162 of 165 cells whose data is present are filled; <AgreementText>; not present here: ..."
std::string CellsSentence(const proto::Table& t, const Cells& cells);

// A table's key gain: the rows of its first claim that sets one row against one other row over
// every column (GAIN_AT_LEAST, MEAN_GAIN_AT_LEAST, or ROW_AT_LEAST_OTHERS with one other row).
struct GainColumn {
  std::string label;            // the column's
  bool filled = false;          // both our cells are filled
  std::string missing;          // when not: why ("no data", "not run", "stale", "RUN FAILED")
  double ours = 0;              // row mean − base mean
  PairedInterval interval;      // the same on the seeds both cells recorded (95%)
  bool has_paper = false;
  double paper = 0;             // the paper's printed row − base
  int partitions = 0;           // > 1: our gain on each partition of the partition spread
  double partition_low = 0, partition_high = 0;
};
struct KeyGain {
  std::string row, base, claim;  // row keys; the claim's text
  std::vector<GainColumn> columns;
};
std::optional<KeyGain> KeyGainOf(const proto::Table& t, const Cells& cells, const PartitionSpread& spread);

// The key gain as Markdown: per column ours with its interval, the paper's, the difference and the
// verdict on reaching the paper's gain, then a line of totals.
std::string KeyGainBlock(const proto::Table& t, const KeyGain& g);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_TABLE_SUMMARY_H_
