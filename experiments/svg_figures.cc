#include "experiments/svg_figures.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fgl::experiments {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string AccuracySvg(const std::string& title, const std::vector<Series>& series) {
  return CurveSvg(title, series, /*percent=*/true);
}

std::string CurveSvg(const std::string& title, const std::vector<Series>& series, bool percent) {
  constexpr double kW = 800, kH = 400, kLeft = 50, kRight = 170, kTop = 30, kBottom = 40;
  int max_round = 1;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const Series& s : series)
    for (auto [r, a] : s.points) {
      max_round = std::max(max_round, r);
      lo = std::min(lo, a);
      hi = std::max(hi, a);
    }
  if (lo > hi) lo = 0, hi = percent ? 100 : 1;
  // A positive quantity that is not a percentage (a loss) on a log axis: a few large early values
  // would otherwise flatten the rest of the curve.
  const bool log_axis = !percent && lo > 0;
  if (log_axis) {
    lo = std::floor(std::log10(lo));
    hi = std::max(lo + 1, std::ceil(std::log10(hi)));
  } else if (percent) {
    lo = std::floor(lo / 10) * 10;
    hi = std::min(100.0, std::ceil(hi / 10) * 10);
    if (hi <= lo) hi = lo + 10;
  } else {
    lo = std::min(0.0, lo);
    if (hi <= lo) hi = lo + 1;
  }
  auto axis = [&](double v) { return log_axis ? std::log10(v) : v; };
  auto x = [&](double r) { return kLeft + (kW - kLeft - kRight) * (r - 1) / std::max(1, max_round - 1); };
  auto y = [&](double a) { return kTop + (kH - kTop - kBottom) * (1 - (a - lo) / (hi - lo)); };  // axis units
  static const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%.0f\" y=\"18\" font-size=\"13\">%s</text>\n",
      kW, kH, kLeft, Escape(title));
  for (double a = lo; a <= hi + 1e-9; a += log_axis ? 1 : (hi - lo) / 5) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"5\" y=\"%.1f\">%s</text>\n",
        kLeft, y(a), kW - kRight, y(a), y(a) + 4, percent ? absl::StrFormat("%.0f%%", a) : absl::StrFormat("%.3g", log_axis ? std::pow(10, a) : a)));
  }
  const int step = max_round <= 10 ? 1 : max_round <= 50 ? 5 : max_round <= 100 ? 10 : 50;
  for (int r = 1; r <= max_round; r += (r == 1 && step > 1) ? step - 1 : step) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
        x(r), kH - kBottom, x(r), kH - kBottom + 4, x(r), kH - kBottom + 15, r));
  }
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\">round</text>\n", (kW - kRight) / 2, kH - 8));
  for (size_t i = 0; i < series.size(); ++i) {
    std::vector<std::string> pts;
    for (auto [r, a] : series[i].points) pts.push_back(absl::StrFormat("%.1f,%.1f", x(r), y(axis(a))));
    const char* color = kColors[i % 10];
    absl::StrAppend(&svg, absl::StrFormat(
        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n"
        "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n",
        color, absl::StrJoin(pts, " "), kW - kRight + 8, kTop + 14 * (i + 1), color, Escape(series[i].label)));
  }
  return svg + "</svg>\n";
}

std::string GridHeatmapSvg(const proto::Table& t,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  constexpr double kCellW = 110, kCellH = 34, kLeft = 260, kTop = 70;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& [key, r] : cells) {
    if (r.state != CellResult::State::kDone || r.values.empty()) continue;
    const double m = MeanStd(r.values).first;
    lo = std::min(lo, m);
    hi = std::max(hi, m);
  }
  if (lo > hi) return "";
  // Wide enough for the subtitle whatever the column count.
  const double w = std::max(720.0, kLeft + kCellW * t.columns_size() + 20), h = kTop + kCellH * t.rows_size() + 20;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"18\" font-size=\"13\">%s</text>\n"
      "<text x=\"10\" y=\"36\">%s, mean ± std over seeds; darker = higher (%.1f to %.1f)</text>\n",
      w, h, Escape(t.title()), Escape(t.metric()), lo, hi);
  for (int j = 0; j < t.columns_size(); ++j) {
    const proto::Column& c = t.columns(j);
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                                          kLeft + kCellW * (j + 0.5), kTop - 8, Escape(c.label().empty() ? c.key() : c.label())));
  }
  for (int i = 0; i < t.rows_size(); ++i) {
    const proto::Row& row = t.rows(i);
    const double y = kTop + kCellH * i;
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"10\" y=\"%.1f\">%s</text>\n", y + kCellH / 2 + 4,
                                          Escape(row.label().empty() ? row.key() : row.label())));
    for (int j = 0; j < t.columns_size(); ++j) {
      const CellResult& r = Lookup(cells, row.key(), t.columns(j).key());
      const double x = kLeft + kCellW * j;
      const bool done = r.state == CellResult::State::kDone && !r.values.empty();
      // White (the lowest mean) to a dark blue (the highest).
      const double f = !done ? 0 : hi > lo ? (MeanStd(r.values).first - lo) / (hi - lo) : 1;
      const int red = static_cast<int>(std::lround(255 - 225 * f)), green = static_cast<int>(std::lround(255 - 155 * f));
      absl::StrAppend(&svg, absl::StrFormat(
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"#999\"/>"
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
          x, y, kCellW, kCellH, done ? absl::StrFormat("rgb(%d,%d,255)", red, green) : "#eee", x + kCellW / 2,
          y + kCellH / 2 + 4, f > 0.6 ? "white" : "black",
          done ? absl::StrFormat("%.1f ± %.1f", MeanStd(r.values).first, MeanStd(r.values).second) : "–"));
    }
  }
  return svg + "</svg>\n";
}

std::string FidelitySvg(const proto::Table& t,
                        const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  constexpr double kW = 640, kH = 480, kLeft = 50, kRight = 200, kTop = 60, kBottom = 50;
  struct Point {
    double paper, ours;
    size_t row;
  };
  std::vector<Point> points;
  std::vector<std::string> labels;
  double lo = 100, hi = 0;
  for (const proto::Cell& c : t.cells()) {
    const CellResult& r = Lookup(cells, c.row(), c.column());
    if (r.state != CellResult::State::kDone || r.values.empty() || !c.paper().present() || !IsAccuracy(r.value)) {
      continue;
    }
    size_t row = 0;
    while (row < labels.size() && labels[row] != c.row()) ++row;
    if (row == labels.size()) labels.push_back(c.row());
    const double ours = MeanStd(r.values).first;
    points.push_back({c.paper().mean(), ours, row});
    lo = std::min({lo, ours, c.paper().mean()});
    hi = std::max({hi, ours, c.paper().mean()});
  }
  if (points.empty()) return "";
  // Percent, or fractions (Table.fraction): the axes' step and the agreement band scale alike.
  const double step = t.fraction() ? 0.1 : 10, band = t.fraction() ? 0.02 : 2;
  lo = std::floor(lo / step) * step;
  hi = std::min(10 * step, std::ceil(hi / step) * step);
  if (hi <= lo) hi = lo + step;
  const double side = std::min(kW - kLeft - kRight, kH - kTop - kBottom);
  auto x = [&](double a) { return kLeft + side * (a - lo) / (hi - lo); };
  auto y = [&](double a) { return kTop + side * (1 - (a - lo) / (hi - lo)); };
  static const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"18\" font-size=\"13\">%s</text>\n"
      "<text x=\"%.0f\" y=\"34\">ours against the paper, one point per filled cell</text>\n",
      kW, kH, kLeft, Escape(t.id()), kLeft);
  // The ±2-point band around the diagonal, then the diagonal.
  absl::StrAppend(&svg, absl::StrFormat(
      "<polygon fill=\"#eef\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n", x(lo), y(lo + band),
      x(hi - band), y(hi), x(hi), y(hi - band), x(lo + band), y(lo)));
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>\n",
                                        x(lo), y(lo), x(hi), y(hi)));
  for (double a = lo; a <= hi + 1e-9; a += (hi - lo) / 5) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<text x=\"5\" y=\"%.1f\">%.*f</text><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n",
        y(a) + 4, t.fraction() ? 2 : 0, a, x(a), kTop + side + 15, t.fraction() ? 2 : 0, a));
  }
  absl::StrAppend(&svg, absl::StrFormat(
      "<text x=\"%.0f\" y=\"%.0f\">paper (%s)</text><text x=\"5\" y=\"%.0f\">ours (%s)</text>\n"
      "<text x=\"%.0f\" y=\"%.0f\" fill=\"#88a\">shaded: within ±%s</text>\n",
      kLeft + side / 2 - 20, kTop + side + 32, t.fraction() ? "fraction" : "%", kTop - 12,
      t.fraction() ? "fraction" : "%", kLeft + side - 130, kTop + side - 8, t.fraction() ? "0.02" : "2 points"));
  for (const Point& p : points) {
    absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x(p.paper),
                                          y(p.ours), kColors[p.row % 10]));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">● %s</text>\n", kLeft + side + 15,
                                          kTop + 14 * (i + 1), kColors[i % 10], Escape(RowLabel(t, labels[i]))));
  }
  return svg + "</svg>\n";
}

}  // namespace fgl::experiments
