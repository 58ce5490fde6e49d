// A report's figures as dependency-free SVG: curves against round, the cells as a heat map, and
// our means against the paper's (fidelity).
#ifndef FGL_EXPERIMENTS_SVG_FIGURES_H_
#define FGL_EXPERIMENTS_SVG_FIGURES_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

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

#endif  // FGL_EXPERIMENTS_SVG_FIGURES_H_
