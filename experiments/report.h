// A table's Markdown report, built only from logged run results: what the table comes to first
// (the claims' verdicts, the cells' fill and agreement, the key gain), then our numbers with their
// signed difference from the paper's, then its sections (agreement per row, gains, protocol,
// compute, provenance; the run keys folded away).
#ifndef FGL_EXPERIMENTS_REPORT_H_
#define FGL_EXPERIMENTS_REPORT_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

struct Provenance {
  // Everything here comes from the table and the run records, so that a report regenerates byte
  // for byte from a clone: the commits and machines that produced the records, not today's.
  std::string commits, machines, seeds;
  std::vector<std::pair<std::string, std::string>> spec_hashes;  // cell -> key
};

// Markdown: title; verdict, claims and key gain; our grid (split by columns to stay readable) with
// the paper's values folded beneath; the other sections; provenance. `svg_name` is linked if
// non-empty.
std::string MarkdownReport(const proto::Table& table,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                           const Provenance& provenance, const std::string& svg_name,
                           const std::string& fidelity_svg_name = "", const PartitionSpread& spread = {});

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_REPORT_H_
