#include "experiments/svg_figures.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace fgl::experiments {
namespace {

constexpr double kFont = 11, kTitleFont = 13;
constexpr double kLine = 13, kTitleLine = 16;  // baseline to baseline
const char* const kEllipsis = "…";

std::string Escape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// The byte length of the UTF-8 character that starts at s[i] (1 for a stray byte).
size_t CharBytes(absl::string_view s, size_t i) {
  const unsigned char c = s[i];
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  return std::min(n, s.size() - i);
}

// The longest prefix of `s` (whole characters) whose width with `suffix` fits `max_width`.
size_t FittingPrefix(absl::string_view s, absl::string_view suffix, double font_size, double max_width) {
  size_t end = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t next = i + CharBytes(s, i);
    if (TextWidth(absl::StrCat(s.substr(0, next), suffix), font_size) > max_width) break;
    end = i = next;
  }
  return end;
}

// `text` on one line of at most `max_width`, shortened with "…" where it is longer.
std::string OneLine(absl::string_view text, double font_size, double max_width) {
  const std::vector<std::string> lines = WrapText(text, font_size, max_width, 1);
  return lines.empty() ? "" : lines[0];
}

// Lines below the first of a block of `lines` (0 for none or one): what its height adds.
double MoreLines(const std::vector<std::string>& lines) {
  return lines.empty() ? 0.0 : static_cast<double>(lines.size() - 1);
}

// A legend's labels, each in at most two lines of at most `max_width`: entries 14 px apart, 13 px
// more for a second line.
struct Legend {
  std::vector<std::vector<std::string>> lines;
  std::vector<double> offsets;  // each entry's first baseline below the legend's first
  double width = 0, height = 0;
};
Legend LayOutLegend(const std::vector<std::string>& labels, double max_width) {
  Legend legend;
  for (const std::string& label : labels) {
    legend.lines.push_back(WrapText(label, kFont, max_width, 2));
    if (legend.lines.back().empty()) legend.lines.back().push_back("");
    legend.offsets.push_back(legend.height);
    legend.height += 14 + kLine * (legend.lines.back().size() - 1);
    for (const std::string& line : legend.lines.back()) legend.width = std::max(legend.width, TextWidth(line, kFont));
  }
  return legend;
}

// One <text> line per entry of `lines`, the first baseline at `y`.
std::string TextLines(const std::vector<std::string>& lines, double x, double y, double line_height,
                      const std::string& attributes) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\"%s>%s</text>\n", x, y + line_height * i,
                                          attributes, Escape(lines[i])));
  }
  return out;
}

std::string SvgHead(double w, double h) {
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
      "font-size=\"%.0f\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      w, h, kFont);
}

std::string Hsl(double hue, double s, double l) {
  const double c = (1 - std::abs(2 * l - 1)) * s, hp = hue / 60, x = c * (1 - std::abs(std::fmod(hp, 2) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) r = c, g = x;
  else if (hp < 2) r = x, g = c;
  else if (hp < 3) g = c, b = x;
  else if (hp < 4) g = x, b = c;
  else if (hp < 5) r = x, b = c;
  else r = c, b = x;
  const double m = l - c / 2;
  auto byte = [m](double v) { return static_cast<int>(std::lround(255 * (v + m))); };
  return absl::StrFormat("#%02x%02x%02x", byte(r), byte(g), byte(b));
}

}  // namespace

double TextWidth(absl::string_view text, double font_size) {
  double em = 0;
  for (size_t i = 0; i < text.size(); i += CharBytes(text, i)) {
    const unsigned char c = text[i];
    if (c >= 0x80 || absl::string_view("mwMW%@").find(c) != absl::string_view::npos) {
      em += 1.0;  // DejaVu Sans: W 0.99 em, m 0.97, ± 0.84, — 1.0
    } else if (absl::string_view("#&+<=>~^").find(c) != absl::string_view::npos) {
      em += 0.85;
    } else if (absl::string_view(" iljftrI.,:;'|!()[]-/\\\"").find(c) != absl::string_view::npos) {
      em += 0.45;
    } else if (c >= 'A' && c <= 'Z') {
      em += 0.8;  // the widest other capitals, O and Q: 0.79 em
    } else {
      em += 0.66;  // digits 0.64 em, the widest other lower case letters 0.64
    }
  }
  return em * font_size;
}

std::vector<std::string> WrapText(absl::string_view text, double font_size, double max_width, int max_lines) {
  std::vector<std::string> lines;
  std::string current;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    const std::string candidate = current.empty() ? std::string(word) : absl::StrCat(current, " ", word);
    if (TextWidth(candidate, font_size) <= max_width) {
      current = candidate;
      continue;
    }
    if (!current.empty()) lines.push_back(current);
    // A word wider than a line is broken where it must be, at least one character a line.
    while (TextWidth(word, font_size) > max_width) {
      const size_t cut = std::max(FittingPrefix(word, "", font_size, max_width), CharBytes(word, 0));
      lines.emplace_back(word.substr(0, cut));
      word.remove_prefix(cut);
    }
    current = std::string(word);
  }
  if (!current.empty()) lines.push_back(current);
  if (max_lines > 0 && static_cast<int>(lines.size()) > max_lines) {
    lines.resize(max_lines);
    std::string& last = lines.back();
    last.resize(FittingPrefix(last, kEllipsis, font_size, max_width));
    while (!last.empty() && last.back() == ' ') last.pop_back();
    last += kEllipsis;
  }
  return lines;
}

std::vector<std::string> Palette(int n) {
  // tab10, then the darkest shade of each of d3's category20b hues and a middle one: twenty
  // colours that read apart on white; beyond them, hues a golden angle apart.
  static const char* const kFixed[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                                       "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
                                       "#7b4173", "#5254a3", "#8ca252", "#bd9e39", "#ad494a", "#a55194"};
  std::vector<std::string> out;
  std::set<std::string> used;
  for (int i = 0; i < n; ++i) {
    std::string c = i < 20 ? kFixed[i] : Hsl(std::fmod(i * 137.508, 360), 0.65, i % 2 ? 0.35 : 0.5);
    for (double nudge = 7; !used.insert(c).second; nudge += 7) {
      c = Hsl(std::fmod(i * 137.508 + nudge, 360), 0.65, i % 2 ? 0.35 : 0.5);
    }
    out.push_back(c);
  }
  return out;
}

std::string AccuracySvg(const std::string& title, const std::vector<Series>& series) {
  return CurveSvg(title, series, /*percent=*/true);
}

std::string CurveSvg(const std::string& title, const std::vector<Series>& series, bool percent,
                     const std::string& y_label) {
  constexpr double kW = 800, kLeft = 62, kMinPlotH = 300, kBottom = 44, kMaxLegend = 240, kSwatch = 22;
  int max_round = 1;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  bool faint = false;
  auto extend = [&](const std::vector<std::pair<int, double>>& points) {
    for (auto [r, a] : points) {
      max_round = std::max(max_round, r);
      lo = std::min(lo, a);
      hi = std::max(hi, a);
    }
  };
  std::vector<std::string> labels;
  for (const Series& s : series) {
    extend(s.points);
    for (const auto& seed : s.seeds) extend(seed);
    faint |= !s.seeds.empty();
    labels.push_back(s.label);
  }
  const Legend legend = LayOutLegend(labels, kMaxLegend);
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
  // The title wraps over the whole width; the legend takes the right margin.
  const std::vector<std::string> title_lines = WrapText(title, kTitleFont, kW - 20, 4);
  const double note_y = 18 + kTitleLine * MoreLines(title_lines) + 15;
  const double top = note_y + (faint ? 20 : 5);
  const double plot_right = kW - std::max(80.0, legend.width + kSwatch + 16);
  const double plot_h = std::max(kMinPlotH, legend.height + 14);
  const double h = top + plot_h + kBottom;
  auto axis = [&](double v) { return log_axis ? std::log10(v) : v; };
  auto x = [&](double r) { return kLeft + (plot_right - kLeft) * (r - 1) / std::max(1, max_round - 1); };
  auto y = [&](double a) { return top + plot_h * (1 - (a - lo) / (hi - lo)); };  // axis units
  std::string svg = SvgHead(kW, h);
  absl::StrAppend(&svg, TextLines(title_lines, 10, 18, kTitleLine, absl::StrFormat(" font-size=\"%.0f\"", kTitleFont)));
  if (faint) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<text x=\"10\" y=\"%.1f\">bold: the mean over seeds; faint: each seed</text>\n", note_y));
  }
  // Percent ticks on round numbers (every 10 or 20 points), others at fifths of the range.
  const double tick = log_axis ? 1 : percent ? (hi - lo <= 50 ? 10 : 20) : (hi - lo) / 5;
  for (double a = lo; a <= hi + 1e-9; a += tick) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
        kLeft, y(a), plot_right, y(a), kLeft - 6, y(a) + 4,
        percent ? absl::StrFormat("%.0f%%", a) : absl::StrFormat("%.3g", log_axis ? std::pow(10, a) : a)));
  }
  const int step = max_round <= 10 ? 1 : max_round <= 50 ? 5 : max_round <= 100 ? 10 : 50;
  for (int r = 1; r <= max_round; r += (r == 1 && step > 1) ? step - 1 : step) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
        x(r), top + plot_h, x(r), top + plot_h + 4, x(r), top + plot_h + 15, r));
  }
  // The axes' names: round beneath, the quantity up the left edge.
  const std::string quantity = OneLine(!y_label.empty() ? y_label
                                      : percent        ? "test accuracy (%)"
                                      : log_axis       ? "value (log scale)"
                                                       : "value",
                                      kFont, plot_h);
  absl::StrAppend(&svg, absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">round</text>\n"
      "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" text-anchor=\"middle\">%s</text>\n",
      (kLeft + plot_right) / 2, top + plot_h + 34, top + plot_h / 2, top + plot_h / 2, Escape(quantity)));
  const std::vector<std::string> colors = Palette(static_cast<int>(series.size()));
  auto polyline = [&](const std::vector<std::pair<int, double>>& points) {
    std::vector<std::string> pts;
    for (auto [r, a] : points) pts.push_back(absl::StrFormat("%.1f,%.1f", x(r), y(axis(a))));
    return absl::StrJoin(pts, " ");
  };
  // Every seed first, so that no faint line covers a bold one.
  for (size_t i = 0; i < series.size(); ++i) {
    for (const auto& seed : series[i].seeds) {
      absl::StrAppend(&svg, absl::StrFormat(
          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1\" stroke-opacity=\"0.3\" points=\"%s\"/>\n",
          colors[i], polyline(seed)));
    }
  }
  const double bold = faint ? 2.2 : 1.5;
  for (size_t i = 0; i < series.size(); ++i) {
    const double ly = top + 14 + legend.offsets[i];
    absl::StrAppend(&svg, absl::StrFormat(
        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" points=\"%s\"/>\n"
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"/>\n",
        colors[i], bold, polyline(series[i].points), plot_right + 10, ly - 4, plot_right + 10 + kSwatch - 6, ly - 4,
        colors[i], bold));
    absl::StrAppend(&svg, TextLines(legend.lines[i], plot_right + 10 + kSwatch, ly, kLine,
                                    absl::StrFormat(" fill=\"%s\"", colors[i])));
  }
  return svg + "</svg>\n";
}

namespace {

// What a grid's filled cells span: their means' range, the largest std over seeds, the smallest
// non-zero |mean|, and whether every cell is an accuracy (a column may set its own value: FedEgo
// Fig. 5's divergences). lo > hi when no cell is filled.
struct GridStats {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  double largest_std = 0, smallest = std::numeric_limits<double>::infinity();
  bool all_accuracies = true;
};

GridStats GridStatsOf(const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  GridStats g;
  for (const auto& [key, r] : cells) {
    if (r.state != CellResult::State::kDone || r.values.empty()) continue;
    g.all_accuracies &= IsAccuracy(r.value);
    const auto [mean, std] = MeanStd(r.values);
    g.lo = std::min(g.lo, mean);
    g.hi = std::max(g.hi, mean);
    g.largest_std = std::max(g.largest_std, std);
    if (mean != 0) g.smallest = std::min(g.smallest, std::abs(mean));
  }
  return g;
}

double ColourSpan(const proto::Table& t, const GridStats& g) {
  if (g.lo > g.hi) return 0;
  const double floor = g.all_accuracies ? (t.fraction() ? 0.04 : 4.0) : 0.0;
  return std::max({g.hi - g.lo, 4 * g.largest_std, floor});
}

}  // namespace

double GridColourSpan(const proto::Table& t,
                      const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  return ColourSpan(t, GridStatsOf(cells));
}

std::string GridHeatmapSvg(const proto::Table& t,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  constexpr double kCellH = 34, kMinCellW = 110, kMaxLeft = 280, kBarW = 200, kPanelGap = 18;
  const GridStats stats = GridStatsOf(cells);
  const double lo = stats.lo, hi = stats.hi, smallest = stats.smallest, largest_std = stats.largest_std;
  const bool all_accuracies = stats.all_accuracies;
  if (lo > hi) return "";
  // Centred on the means, never narrower than the seeds' spread (GridColourSpan).
  const double span = ColourSpan(t, stats), mid = (lo + hi) / 2;
  const double scale_lo = mid - span / 2, scale_hi = mid + span / 2;
  // Decimals that show small values (a weight divergence of 0.02) with two significant digits.
  int decimals = 1;
  if (all_accuracies) decimals = AccuracyDecimals(t);
  if (std::isfinite(smallest)) {
    decimals = std::max(decimals, std::min(4, 1 - static_cast<int>(std::floor(std::log10(smallest)))));
  }
  auto cell_text = [&](const CellResult& r) {
    const auto [mean, std] = MeanStd(r.values);
    return absl::StrFormat("%.*f ± %.*f", decimals, mean, decimals, std);
  };
  double cell_w = kMinCellW, label_w = 0;
  for (const auto& [key, r] : cells) {
    if (r.state == CellResult::State::kDone && !r.values.empty()) {
      cell_w = std::max(cell_w, TextWidth(cell_text(r), kFont) + 12);
    }
  }
  for (const proto::Row& row : t.rows()) label_w = std::max(label_w, TextWidth(Label(row), kFont));
  const double left = std::clamp(label_w + 20, 80.0, kMaxLeft);
  // Columns that do not fit the width go on panels beneath, the panels near-equal in columns.
  const int n_cols = t.columns_size();
  const int fit = std::max(1, static_cast<int>((kMaxGridWidth - left - 20) / cell_w));
  const int panels = std::max(1, (n_cols + fit - 1) / fit);
  const int per_panel = std::max(1, (n_cols + panels - 1) / panels);
  const double w = std::max(600.0, left + cell_w * per_panel + 20);
  std::vector<std::vector<std::string>> column_lines;
  int header_lines = 1;
  for (const proto::Column& c : t.columns()) {
    column_lines.push_back(WrapText(Label(c), kFont, cell_w - 8, 3));
    header_lines = std::max(header_lines, static_cast<int>(column_lines.back().size()));
  }
  const std::vector<std::string> title_lines = WrapText(t.title(), kTitleFont, w - 20, 4);
  const std::vector<std::string> subtitle_lines = WrapText(
      absl::StrCat(t.metric(), t.metric().empty() ? "" : ", ", "mean ± std over seeds; darker = higher"), kFont,
      w - 20, 4);
  // The scale's ends on a line of their own, then why it spans what it does.
  std::vector<std::string> scale_lines = WrapText(
      absl::StrFormat("colour scale %.*f (white) to %.*f (dark blue)", decimals, scale_lo, decimals, scale_hi), kFont,
      w - kBarW - 30, 2);
  for (std::string& line : WrapText(
           absl::StrFormat("the widest of: the means' range %.*f, 4 × the largest std over seeds %.*f%s", decimals,
                           hi - lo, decimals, 4 * largest_std,
                           all_accuracies ? (t.fraction() ? ", 0.04" : ", 4 points") : ""),
           kFont, w - kBarW - 30, 4)) {
    scale_lines.push_back(std::move(line));
  }
  double y = 18 + kTitleLine * MoreLines(title_lines) + 18;
  std::string body = TextLines(title_lines, 10, 18, kTitleLine, absl::StrFormat(" font-size=\"%.0f\"", kTitleFont));
  absl::StrAppend(&body, TextLines(subtitle_lines, 10, y, kLine, ""));
  y += kLine * subtitle_lines.size() + 4;
  // The scale itself: ten swatches from white to dark blue, its words beside it.
  auto fill = [](double f) {
    f = std::clamp(f, 0.0, 1.0);
    return absl::StrFormat("rgb(%d,%d,255)", static_cast<int>(std::lround(255 - 225 * f)),
                           static_cast<int>(std::lround(255 - 155 * f)));
  };
  for (int k = 0; k < 10; ++k) {
    absl::StrAppend(&body, absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"10\" fill=\"%s\" "
                                           "stroke=\"#999\" stroke-width=\"0.5\"/>\n",
                                           10 + kBarW / 10 * k, y - 9, kBarW / 10, fill(k / 9.0)));
  }
  absl::StrAppend(&body, TextLines(scale_lines, kBarW + 20, y, kLine, ""));
  y += kLine * MoreLines(scale_lines) + 12;
  const double header_h = kLine * header_lines + 8;
  for (int p = 0; p * per_panel < n_cols; ++p) {
    const int first = p * per_panel, last = std::min(n_cols, first + per_panel);
    y += (p == 0 ? 0 : kPanelGap);
    for (int j = first; j < last; ++j) {
      // Bottom-aligned: the last line of every label just above the squares.
      absl::StrAppend(&body, TextLines(column_lines[j], left + cell_w * (j - first + 0.5),
                                       y + header_h - 6 - kLine * MoreLines(column_lines[j]), kLine,
                                       " text-anchor=\"middle\""));
    }
    y += header_h;
    for (int i = 0; i < t.rows_size(); ++i) {
      const proto::Row& row = t.rows(i);
      const double row_y = y + kCellH * i;
      const std::vector<std::string> row_lines = WrapText(Label(row), kFont, left - 20, 2);
      absl::StrAppend(&body, TextLines(row_lines, 10, row_y + kCellH / 2 + 4 - kLine / 2 * MoreLines(row_lines),
                                       kLine, ""));
      for (int j = first; j < last; ++j) {
        const CellResult& r = Lookup(cells, row.key(), t.columns(j).key());
        const double x = left + cell_w * (j - first);
        const bool done = r.state == CellResult::State::kDone && !r.values.empty();
        // White (the scale's low end) to a dark blue (its high end).
        const double f = !done ? 0 : span > 0 ? (MeanStd(r.values).first - scale_lo) / span : 1;
        absl::StrAppend(&body, absl::StrFormat(
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"#999\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
            x, row_y, cell_w, kCellH, done ? fill(f) : "#eee", x + cell_w / 2, row_y + kCellH / 2 + 4,
            f > 0.6 ? "white" : "black", done ? cell_text(r) : "–"));
      }
    }
    y += kCellH * t.rows_size();
  }
  return absl::StrCat(SvgHead(w, y + 20), body, "</svg>\n");
}

std::string FidelitySvg(const proto::Table& t,
                        const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  constexpr double kPlotW = 640, kPlotH = 480, kLeft = 50, kTopMin = 60, kBottom = 50, kMaxLegend = 320;
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
  const double side = std::min(kPlotW - kLeft - 200, kPlotH - kTopMin - kBottom);
  // The legend, a row an entry, sets the width; the title wraps within it.
  std::vector<std::string> row_labels;
  for (const std::string& key : labels) row_labels.push_back(RowLabel(t, key));
  const Legend legend = LayOutLegend(row_labels, kMaxLegend);
  const double legend_x = kLeft + side + 15;
  const double w = std::max(kPlotW, legend_x + 14 + legend.width + 10);
  const std::vector<std::string> title_lines = WrapText(t.id(), kTitleFont, w - 2 * kLeft, 3);
  const double subtitle_y = 18 + kTitleLine * title_lines.size();
  const double top = std::max(kTopMin, subtitle_y + 26);
  const double h = std::max(top + side + kBottom, top + legend.height + 24);
  auto x = [&](double a) { return kLeft + side * (a - lo) / (hi - lo); };
  auto y = [&](double a) { return top + side * (1 - (a - lo) / (hi - lo)); };
  std::string svg = SvgHead(w, h);
  absl::StrAppend(
      &svg, TextLines(title_lines, kLeft, 18, kTitleLine, absl::StrFormat(" font-size=\"%.0f\"", kTitleFont)),
      absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\">ours against the paper, one point per filled cell</text>\n", kLeft,
                      subtitle_y));
  // The ±2-point band around the diagonal, then the diagonal.
  absl::StrAppend(&svg, absl::StrFormat(
      "<polygon fill=\"#eef\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n", x(lo), y(lo + band),
      x(hi - band), y(hi), x(hi), y(hi - band), x(lo + band), y(lo)));
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>\n",
                                        x(lo), y(lo), x(hi), y(hi)));
  for (double a = lo; a <= hi + 1e-9; a += (hi - lo) / 5) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<text x=\"5\" y=\"%.1f\">%.*f</text><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n",
        y(a) + 4, t.fraction() ? 2 : 0, a, x(a), top + side + 15, t.fraction() ? 2 : 0, a));
  }
  absl::StrAppend(&svg, absl::StrFormat(
      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">paper (%s)</text><text x=\"5\" y=\"%.0f\">ours (%s)</text>\n"
      "<text x=\"%.0f\" y=\"%.0f\" fill=\"#88a\" text-anchor=\"end\">shaded: within ±%s</text>\n",
      kLeft + side / 2, top + side + 32, t.fraction() ? "fraction" : "%", top - 12,
      t.fraction() ? "fraction" : "%", kLeft + side - 4, top + side - 8, t.fraction() ? "0.02" : "2 points"));
  const std::vector<std::string> colors = Palette(static_cast<int>(labels.size()));
  for (const Point& p : points) {
    absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x(p.paper),
                                          y(p.ours), colors[p.row]));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    const double ly = top + 14 + legend.offsets[i];
    absl::StrAppend(
        &svg, absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">●</text>\n", legend_x, ly, colors[i]),
        TextLines(legend.lines[i], legend_x + 14, ly, kLine, absl::StrFormat(" fill=\"%s\"", colors[i])));
  }
  return svg + "</svg>\n";
}

}  // namespace fgl::experiments
