// The reviewers' front page, experiments/reports/README.md (//experiments:front_page): per paper a
// verdict block (its headline claims with their verdicts, its key gain ours beside the paper's,
// its cells' fill and agreement, the datasets not present), one line per report, and two figures
// across all papers. Everything is computed from tables planned from the run records; nothing here
// reads files, so a test builds its input by hand.
#ifndef FGL_EXPERIMENTS_FRONT_PAGE_H_
#define FGL_EXPERIMENTS_FRONT_PAGE_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"
#include "experiments/table_summary.h"

namespace fgl::experiments {

// One table's cells as its report shows them (PlanTable from the records, nothing run).
struct PlannedTable {
  std::string paper, stem;  // experiments/<paper>/<stem>.textproto -> reports/<paper>/<stem>.md
  proto::Table table;
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  PartitionSpread spread;
};

// A Markdown file under the reports directory.
struct ReportFile {
  std::string paper;
  std::string path;   // relative to the reports directory: "fedtad/table2.md"
  std::string title;  // its first heading
  // Generated from the run records by the table runner: its table is the PlannedTable of the same
  // paper and stem. Otherwise `generator` says what made it ("" when the file does not say).
  bool from_records = false;
  std::string generator;
};

// A paper on the page and the table that carries its headline claims.
struct PaperHeadline {
  std::string paper;  // the folder: "fedtad"
  std::string name;   // as the page names it: "FedTAD"
  std::string table;  // the headline table's stem: "table2"
  std::string why;    // why that table, one sentence
};

struct FrontPageInput {
  std::vector<PaperHeadline> papers;
  std::vector<PlannedTable> tables;  // every report generated from the records
  std::vector<ReportFile> reports;   // every report file, in the order listed
  std::string cells_figure = "front_page_cells.svg";
  std::string gains_figure = "front_page_gains.svg";
};

// The table's key gain (table_summary.h) on its planned cells.
std::optional<KeyGain> KeyGainOf(const PlannedTable& t);

// The page's Markdown; links are relative to the reports directory.
std::string FrontPageMarkdown(const FrontPageInput& input);

// Our mean against the paper's for every filled accuracy cell of every table (a cell that several
// tables share with the same runs once), coloured by paper, with the diagonal and each table's
// agreement band (dashed); fractions are drawn as percent. "" when no cell is filled. Both figures
// keep their text inside the canvas and apart by TextWidth (svg_figures.h): the canvas is 800 px wide
// or as wide as its longest legend line needs, at most kMaxGridWidth, a longer line ending in "…".
std::string CellsFigureSvg(const FrontPageInput& input);

// The papers' key gains per column: the paper's on x, ours on y with its paired 95% interval,
// coloured by paper, with the diagonal; fractions are drawn as points (× 100). "" when none.
std::string GainsFigureSvg(const FrontPageInput& input);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_FRONT_PAGE_H_
