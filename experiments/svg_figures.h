// A report's figures as dependency-free SVG: curves against round, the cells as a heat map, and
// our means against the paper's (fidelity). Every figure keeps its text inside the canvas and apart
// (titles and labels wrap or shorten by TextWidth, a deliberately generous measure), gives each
// series of one figure its own colour (Palette), and parses as XML (svg_render_test renders every
// committed figure with rsvg-convert).
#ifndef FGL_EXPERIMENTS_SVG_FIGURES_H_
#define FGL_EXPERIMENTS_SVG_FIGURES_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

// Fidelity: our mean against the paper's value, one point per filled cell coloured by row, with the
// diagonal and a ±2-point band; "" when no cell is filled.
std::string FidelitySvg(const proto::Table& table,
                        const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// The cells' means as a heat map, rows by columns, each square labelled with mean ± std ("–"
// where a cell has no result); "" when no cell is filled. At most kMaxGridWidth wide: more columns
// than fit go on further panels beneath, each with its own column labels. The colour scale is
// centred on the means and spans GridColourSpan, so seed noise never fills the whole scale.
std::string GridHeatmapSvg(const proto::Table& table,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells);
inline constexpr double kMaxGridWidth = 1200;
// The heat map's colour span: the largest of the range of the filled cells' means, 4 × the largest
// std over seeds of one cell (its ±2σ), and, where every filled cell holds an accuracy
// (CellResult.value), 4 points (0.04 as fractions: twice the agreement rule's 2-point floor, so
// cells that agree with each other differ by at most half the scale). 0 when no cell is filled or
// nothing varies.
double GridColourSpan(const proto::Table& table,
                      const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// A quantity against round. `points`: the bold curve (the mean over seeds); `seeds`: each seed's
// own curve, drawn faint in the same colour (may be empty).
struct Series {
  std::string label;
  std::vector<std::pair<int, double>> points;
  std::vector<std::vector<std::pair<int, double>>> seeds;
};
// Test accuracy (%) against round, one colour per series.
std::string AccuracySvg(const std::string& title, const std::vector<Series>& series);
// Any quantity against round (`percent`: axis in %, capped at 100; otherwise a positive quantity
// is drawn on a log axis), its y axis labelled `y_label` ("test accuracy (%)" where empty and
// `percent`).
std::string CurveSvg(const std::string& title, const std::vector<Series>& series, bool percent,
                     const std::string& y_label = "");

// The width in pixels that `text` (UTF-8) may take at `font_size` in a sans-serif font, on the
// generous side: 1 em for m, w, M, W, %, @ and every non-ASCII character, 0.8 em for other capitals,
// 0.85 em for # & + < = > ~, 0.45 em for narrow marks (i, l, t, f, r, I, space, punctuation), 0.66 em
// otherwise. Measured against DejaVu Sans as rsvg-convert renders it (README.md), it overstates.
double TextWidth(absl::string_view text, double font_size);
// `text` in lines of at most `max_width` (TextWidth), broken at spaces (inside a word only when
// the word alone is too wide); beyond `max_lines` the last line ends in "…".
std::vector<std::string> WrapText(absl::string_view text, double font_size, double max_width, int max_lines);
// `n` distinct colours (no two alike), the first ten Matplotlib's tab10.
std::vector<std::string> Palette(int n);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_SVG_FIGURES_H_
