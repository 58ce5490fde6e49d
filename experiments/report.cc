#include "experiments/report.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fgl::experiments {
namespace {

std::pair<double, double> MeanStd(const std::vector<double>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return {mean, v.size() > 1 ? std::sqrt(var / (v.size() - 1)) : 0.0};
}

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

const CellResult& Lookup(const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                         const std::string& row, const std::string& col) {
  static const CellResult* empty = new CellResult;
  auto it = cells.find({row, col});
  return it == cells.end() ? *empty : it->second;
}

}  // namespace

std::string FormatCell(const CellResult& r, const proto::PublishedValue& paper) {
  const std::string published =
      paper.present() ? absl::StrFormat("paper %.1f ± %.1f", paper.mean(), paper.std()) : "paper –";
  switch (r.state) {
    case CellResult::State::kNotImplemented:
      return absl::StrCat("not implemented yet (", published, ")");
    case CellResult::State::kDataNotPresent:
      return absl::StrCat("data not present (", published, ")");
    case CellResult::State::kFailed:
      return absl::StrCat("RUN FAILED (", published, ")");
    case CellResult::State::kNotPrinted:
      return "–";
    case CellResult::State::kNotRun:
      return absl::StrCat("not run in this report (", published, ")");
    case CellResult::State::kDone:
      break;
  }
  auto [mean, std] = MeanStd(r.values);
  if (!paper.present()) return absl::StrFormat("%.1f ± %.1f (%s)", mean, std, published);
  return absl::StrFormat("%.1f ± %.1f (%s, Δ %+.1f)", mean, std, published, mean - paper.mean());
}

namespace {

// Each row's gain over the "fedavg" row beside the paper's gain, per cell; empty when the table
// has no fedavg row or no comparable cell.
std::string GainSection(const proto::Table& t,
                        const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                        const std::map<std::pair<std::string, std::string>, proto::PublishedValue>& paper) {
  constexpr char kBase[] = "fedavg";
  bool has_base = false;
  for (const proto::Row& r : t.rows()) has_base |= r.key() == kBase;
  if (!has_base) return "";
  auto mean_of = [&](const std::string& row, const std::string& col, double* ours, double* theirs) {
    const CellResult& r = Lookup(cells, row, col);
    auto it = paper.find({row, col});
    if (r.state != CellResult::State::kDone || it == paper.end() || !it->second.present()) return false;
    *ours = MeanStd(r.values).first;
    *theirs = it->second.mean();
    return true;
  };
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(c.label().empty() ? c.key() : c.label());
  header.push_back("summary");
  std::string md = absl::StrCat(
      "\n**Gain over FedAvg** (what the papers claim): ours (row − FedAvg, same partition and seeds) / "
      "the paper's, ✓ when they are within 2 points. Computed from the cells above.\n\n| ",
      absl::StrJoin(header, " | "), " |\n|");
  for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  int rows = 0;
  for (const proto::Row& r : t.rows()) {
    if (r.key() == kBase) continue;
    std::vector<std::string> line = {r.label().empty() ? r.key() : r.label()};
    int n = 0, within = 0, ahead = 0;
    double sum_ours = 0, sum_paper = 0;
    for (const proto::Column& c : t.columns()) {
      double ours, theirs, base_ours, base_theirs;
      if (!mean_of(r.key(), c.key(), &ours, &theirs) || !mean_of(kBase, c.key(), &base_ours, &base_theirs)) {
        line.push_back("–");
        continue;
      }
      const double g = ours - base_ours, gp = theirs - base_theirs;
      const bool ok = std::abs(g - gp) <= 2.0;
      ++n;
      within += ok;
      ahead += g > 0;
      sum_ours += g;
      sum_paper += gp;
      line.push_back(absl::StrFormat("%+.1f / %+.1f%s", g, gp, ok ? " ✓" : ""));
    }
    if (n == 0) continue;
    ++rows;
    line.push_back(absl::StrFormat("within 2 in %d/%d; ahead of FedAvg in %d/%d; mean %+.2f (paper %+.2f)",
                                   within, n, ahead, n, sum_ours / n, sum_paper / n));
    absl::StrAppend(&md, "| ", absl::StrJoin(line, " | "), " |\n");
  }
  return rows == 0 ? "" : md;
}

}  // namespace

namespace {

// What the filled cells cost to compute, from the runs' own logs: the regeneration budget.
std::string ComputeLine(const proto::Table& t, const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  double total = 0;
  size_t runs = 0;
  std::vector<std::string> by_row;
  for (const proto::Row& r : t.rows()) {
    double row_s = 0;
    for (const proto::Column& c : t.columns()) {
      auto it = cells.find({r.key(), c.key()});
      if (it == cells.end() || it->second.state != CellResult::State::kDone) continue;
      row_s += it->second.run_seconds;
      runs += it->second.values.size();
    }
    total += row_s;
    if (row_s > 0) by_row.push_back(absl::StrFormat("%s %.2f", r.label().empty() ? r.key() : r.label(), row_s / 3600));
  }
  if (runs == 0) return "";
  return absl::StrFormat(
      "\n**Compute.** The %d runs behind the filled cells took %.2f h of wall time when they ran "
      "(each run's own log; one thread per run, so two run side by side on a 2-core machine). "
      "By row, in hours: %s.\n",
      runs, total / 3600, absl::StrJoin(by_row, "; "));
}

}  // namespace

std::string MarkdownReport(const proto::Table& t,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                           const Provenance& p, const std::string& svg_name) {
  std::string md = absl::StrCat("# ", t.title(), "\n\n", t.paper(), " — ", t.metric(),
                                ". Each cell: ours mean ± std over seeds (paper mean ± std, Δ = ours − paper).\n\n");
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(c.label().empty() ? c.key() : c.label());
  absl::StrAppend(&md, "| ", absl::StrJoin(header, " | "), " |\n|", std::string(""), "");
  for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  std::map<std::pair<std::string, std::string>, proto::PublishedValue> paper;
  for (const proto::Cell& c : t.cells()) paper[{c.row(), c.column()}] = c.paper();
  for (const proto::Row& r : t.rows()) {
    std::vector<std::string> line = {r.label().empty() ? r.key() : r.label()};
    for (const proto::Column& c : t.columns()) {
      auto it = paper.find({r.key(), c.key()});
      line.push_back(it == paper.end() ? "–" : FormatCell(Lookup(cells, r.key(), c.key()), it->second));
    }
    absl::StrAppend(&md, "| ", absl::StrJoin(line, " | "), " |\n");
  }
  absl::StrAppend(&md, GainSection(t, cells, paper));
  absl::StrAppend(&md, "\n**Protocol.** ", p.protocol, "\n");
  if (!t.notes().empty()) absl::StrAppend(&md, "\n**Notes.** ", t.notes(), "\n");
  if (!svg_name.empty()) absl::StrAppend(&md, "\n![accuracy against round](", svg_name, ")\n");
  absl::StrAppend(&md, ComputeLine(t, cells));
  absl::StrAppend(&md, "\n**Provenance.** Generated from the run records in `experiments/results/` (one file per run, ",
                  "named by the keys below), produced by commit(s) ", p.commits.empty() ? "–" : p.commits, " on ",
                  p.machines.empty() ? "–" : p.machines, "; seeds ", p.seeds, ". Source: ", t.source(), ".\n");
  if (!p.spec_hashes.empty()) {
    absl::StrAppend(&md, "\n<details><summary>Spec hashes (result cache keys)</summary>\n\n");
    for (const auto& [cell, key] : p.spec_hashes) absl::StrAppend(&md, "- ", cell, ": `", key, "`\n");
    absl::StrAppend(&md, "\n</details>\n");
  }
  return md;
}

std::string CsvReport(const proto::Table& t,
                      const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::string csv = "row,column,state,ours_mean,ours_std,runs,paper_mean,paper_std\n";
  for (const proto::Cell& c : t.cells()) {
    const CellResult& r = Lookup(cells, c.row(), c.column());
    const char* state = r.state == CellResult::State::kDone             ? "done"
                        : r.state == CellResult::State::kNotImplemented ? "not_implemented"
                        : r.state == CellResult::State::kDataNotPresent ? "data_not_present"
                        : r.state == CellResult::State::kFailed         ? "failed"
                        : r.state == CellResult::State::kNotRun         ? "not_run"
                                                                        : "not_printed";
    std::string mean, std;
    if (r.state == CellResult::State::kDone) {
      auto [m, s] = MeanStd(r.values);
      mean = absl::StrFormat("%.3f", m);
      std = absl::StrFormat("%.3f", s);
    }
    absl::StrAppend(&csv, c.row(), ",", c.column(), ",", state, ",", mean, ",", std, ",",
                    r.values.size(), ",", c.paper().present() ? absl::StrFormat("%.1f", c.paper().mean()) : "",
                    ",", c.paper().present() ? absl::StrFormat("%.1f", c.paper().std()) : "", "\n");
  }
  return csv;
}

std::string AccuracySvg(const std::string& title, const std::vector<Series>& series) {
  constexpr double kW = 640, kH = 400, kLeft = 50, kRight = 150, kTop = 30, kBottom = 40;
  int max_round = 1;
  double lo = 100, hi = 0;
  for (const Series& s : series)
    for (auto [r, a] : s.points) {
      max_round = std::max(max_round, r);
      lo = std::min(lo, a);
      hi = std::max(hi, a);
    }
  if (lo > hi) lo = 0, hi = 100;
  lo = std::floor(lo / 10) * 10;
  hi = std::min(100.0, std::ceil(hi / 10) * 10);
  if (hi <= lo) hi = lo + 10;
  auto x = [&](double r) { return kLeft + (kW - kLeft - kRight) * (r - 1) / std::max(1, max_round - 1); };
  auto y = [&](double a) { return kTop + (kH - kTop - kBottom) * (1 - (a - lo) / (hi - lo)); };
  static const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%.0f\" y=\"18\" font-size=\"13\">%s</text>\n",
      kW, kH, kLeft, Escape(title));
  for (double a = lo; a <= hi + 1e-9; a += (hi - lo) / 5) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"5\" y=\"%.1f\">%.0f%%</text>\n",
        kLeft, y(a), kW - kRight, y(a), y(a) + 4, a));
  }
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\">round (1..%d)</text>\n",
                                        (kW - kRight) / 2, kH - 10, max_round));
  for (size_t i = 0; i < series.size(); ++i) {
    std::vector<std::string> pts;
    for (auto [r, a] : series[i].points) pts.push_back(absl::StrFormat("%.1f,%.1f", x(r), y(a)));
    const char* color = kColors[i % 10];
    absl::StrAppend(&svg, absl::StrFormat(
        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n"
        "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n",
        color, absl::StrJoin(pts, " "), kW - kRight + 8, kTop + 14 * (i + 1), color, Escape(series[i].label)));
  }
  return svg + "</svg>\n";
}

}  // namespace fgl::experiments
