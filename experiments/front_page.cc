#include "experiments/front_page.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/claims.h"
#include "experiments/markdown_sections.h"

namespace fgl::experiments {
namespace {

using Cells = std::map<std::pair<std::string, std::string>, CellResult>;

const PlannedTable* FindTable(const FrontPageInput& in, const std::string& paper, const std::string& stem) {
  for (const PlannedTable& t : in.tables) {
    if (t.paper == paper && t.stem == stem) return &t;
  }
  return nullptr;
}

std::string PaperName(const FrontPageInput& in, const std::string& paper) {
  for (const PaperHeadline& p : in.papers) {
    if (p.paper == paper) return p.name;
  }
  return paper;
}

// A paper's colour in both figures: the papers' order, then any other folder's.
const char* PaperColor(const FrontPageInput& in, const std::string& paper) {
  static const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  size_t i = 0;
  while (i < in.papers.size() && in.papers[i].paper != paper) ++i;
  if (i == in.papers.size()) {
    std::set<std::string> others;
    for (const PlannedTable& t : in.tables) others.insert(t.paper);
    for (const PaperHeadline& p : in.papers) others.erase(p.paper);
    i += std::distance(others.begin(), others.find(paper));
  }
  return kColors[i % 10];
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

// Cells filled (every seed recorded) of those whose data is present (as the budget counts them).
struct Fill {
  int filled = 0, present = 0;
};
Fill FillOf(const PlannedTable& t) {
  Fill f;
  for (const auto& [key, r] : t.cells) {
    if (r.state == CellResult::State::kDataNotPresent || r.state == CellResult::State::kNotPrinted) continue;
    ++f.present;
    f.filled += r.state == CellResult::State::kDone;
  }
  return f;
}

// How a table's claims came out: "2 reproduced, 1 not reproduced, 0 inconclusive; ...".
std::string ClaimCounts(const std::vector<ClaimJudgement>& judged) {
  if (judged.empty()) return "no claims";
  std::map<ClaimJudgement::Outcome, int> n;
  int so_far = 0;
  for (const ClaimJudgement& j : judged) {
    ++n[j.outcome];
    so_far += j.so_far;
  }
  using O = ClaimJudgement::Outcome;
  std::vector<std::string> parts;
  if (n[O::kReproduced] + n[O::kNotReproduced] + n[O::kInconclusive] > 0) {
    parts.push_back(absl::StrCat(n[O::kReproduced], " reproduced, ", n[O::kNotReproduced], " not reproduced, ",
                                 n[O::kInconclusive], " inconclusive"));
  }
  if (n[O::kHolds] + n[O::kDoesNotHold] > 0) {
    parts.push_back(absl::StrCat(n[O::kHolds], " hold", n[O::kHolds] == 1 ? "s" : "", " and ", n[O::kDoesNotHold],
                                 n[O::kDoesNotHold] == 1 ? " does" : " do", " not on our means"));
  }
  if (n[O::kNotCheckable] > 0) parts.push_back(absl::StrCat(n[O::kNotCheckable], " not checkable"));
  std::string out = absl::StrJoin(parts, "; ");
  if (so_far > 0) absl::StrAppend(&out, " (", so_far, " so far: cells they compare await runs)");
  return out;
}

// "k of n within ..." under the table's agreement rule; "" where it has none to apply.
std::string AgreementText(const PlannedTable& t) {
  const double min_points = t.table.agreement_min_points();
  if (min_points <= 0 && !IsAccuracy(t.table.value())) return "";
  const AgreementCount a = CountAgreement(t.table, t.cells);
  if (a.filled == 0) return "";
  if (min_points > 0) {
    return absl::StrFormat("%d of %d filled cells agree (the table's rule: within the paper's ± or %g points)",
                           a.within, a.filled, min_points);
  }
  return absl::StrFormat("%d of %d filled cells lie within the paper's printed ± (the table sets no wider agreement rule)",
                         a.within, a.filled);
}

// The datasets of the columns with a cell whose data is not on this machine: "`ogbn_arxiv` (arXiv 5, ...)".
std::string MissingDatasets(const PlannedTable& t) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_dataset;
  for (const proto::Column& c : t.table.columns()) {
    bool missing = false;
    for (const auto& [key, r] : t.cells) missing |= key.second == c.key() && r.state == CellResult::State::kDataNotPresent;
    if (!missing) continue;
    std::string dataset = c.overrides().dataset().empty() ? t.table.base().dataset() : c.overrides().dataset();
    dataset = dataset.substr(0, dataset.find(':'));
    auto it = std::find_if(by_dataset.begin(), by_dataset.end(), [&](const auto& d) { return d.first == dataset; });
    if (it == by_dataset.end()) it = by_dataset.insert(by_dataset.end(), {dataset, {}});
    it->second.push_back(Label(c));
  }
  std::vector<std::string> parts;
  for (const auto& [dataset, columns] : by_dataset) {
    parts.push_back(absl::StrCat("`", dataset, "` (", absl::StrJoin(columns, ", "), ")"));
  }
  return absl::StrJoin(parts, "; ");
}

// Where a gain's cell is not filled: why.
std::string MissingReason(const CellResult& a, const CellResult& b) {
  for (const CellResult* r : {&a, &b}) {
    if (r->state == CellResult::State::kDataNotPresent) return "no data";
  }
  for (const CellResult* r : {&a, &b}) {
    if (r->state == CellResult::State::kStale) return "stale";
    if (r->state == CellResult::State::kFailed) return "RUN FAILED";
  }
  return "not run";
}

double Scale(const proto::Table& t) { return t.fraction() ? 100 : 1; }

// The gain's markdown table and its summary lines.
std::string KeyGainBlock(const PlannedTable& t, const KeyGain& g) {
  const int d = AccuracyDecimals(t.table);
  const double tolerance = t.table.fraction() ? 0.02 : 2;
  const std::string row = RowLabel(t.table, g.row), base = RowLabel(t.table, g.base);
  bool spread = false;
  for (const GainColumn& c : g.columns) spread |= c.partitions > 1;
  std::string md = absl::StrCat(
      "\n**Key gain: ", row, " − ", base, "** (the rows of the claim \"", g.claim,
      "\"). Ours: the mean over the seeds both cells recorded, with its paired 95% interval; the paper's: "
      "the difference of its printed means; the verdict on reaching the paper's gain as for a claim; ✓: within ",
      t.table.fraction() ? "0.02" : "2 points", " of the paper's gain",
      spread ? "; the gain on each partition of the table's partition spread as lowest to highest" : "", ".\n\n",
      "| dataset | ours | the paper's | ours − paper's | paper's gain reached? |", spread ? " gain over partitions |" : "",
      "\n|---|---|---|---|---|", spread ? "---|" : "", "\n");
  int n = 0, within = 0, ahead = 0;
  double sum_ours = 0, sum_paper = 0;
  std::map<Verdict, int> verdicts;
  for (const GainColumn& c : g.columns) {
    std::vector<std::string> line = {c.label};
    if (!c.filled) {
      line.push_back(c.missing);
    } else if (c.interval.has_interval) {
      line.push_back(absl::StrFormat("%+.*f [%+.*f, %+.*f] (n=%d)", d, c.ours, d, c.interval.low, d,
                                     c.interval.high, c.interval.n));
    } else {
      line.push_back(absl::StrFormat("%+.*f (n=%d, no interval)", d, c.ours, c.interval.n));
    }
    line.push_back(c.has_paper ? absl::StrFormat("%+.*f", d, c.paper) : "–");
    if (c.filled && c.has_paper) {
      const bool ok = std::abs(c.ours - c.paper) <= tolerance;
      const Verdict v = Judge(c.interval, c.paper);
      ++verdicts[v];
      ++n;
      within += ok;
      ahead += c.ours > 0;
      sum_ours += c.ours;
      sum_paper += c.paper;
      line.push_back(absl::StrFormat("%+.*f%s", d, c.ours - c.paper, ok ? " ✓" : ""));
      line.push_back(VerdictName(v));
    } else {
      line.push_back("–");
      line.push_back("–");
    }
    if (spread) {
      line.push_back(c.partitions > 1 ? absl::StrFormat("%+.*f to %+.*f (%d partitions)", d, c.partition_low, d,
                                                        c.partition_high, c.partitions)
                                      : "–");
    }
    absl::StrAppend(&md, "| ", absl::StrJoin(line, " | "), " |\n");
  }
  if (n > 0) {
    absl::StrAppend(
        &md, "\n", absl::StrFormat(
                       "Over the %d datasets with both: mean gain %+.*f ours against %+.*f the paper's; ours ahead of "
                       "%s in %d, within %s of the paper's gain in %d; the paper's gain reached in %d (reproduced), "
                       "missed in %d (not reproduced), undecided in %d (inconclusive).\n",
                       n, d + 1, sum_ours / n, d + 1, sum_paper / n, base, ahead, t.table.fraction() ? "0.02" : "2 points",
                       within, verdicts[Verdict::kReproduced], verdicts[Verdict::kNotReproduced],
                       verdicts[Verdict::kInconclusive]));
  }
  return md;
}

// The paper's own block: headline claims, key gain, cells.
std::string PaperBlock(const FrontPageInput& in, const PaperHeadline& p) {
  const PlannedTable* t = FindTable(in, p.paper, p.table);
  const std::string link = absl::StrCat("[`", p.paper, "/", p.table, "`](", p.paper, "/", p.table, ".md)");
  if (t == nullptr) {
    return absl::StrCat("\n## ", p.name, "\n\nHeadline table ", link,
                        ": no report generated from the run records yet.\n");
  }
  std::string md = absl::StrCat("\n## ", p.name, ": ", t->table.paper(), "\n\nHeadline table ", link, " (",
                                t->table.title(), "): ", p.why, "\n");
  const std::vector<ClaimJudgement> judged = JudgeClaims(t->table, t->cells);
  absl::StrAppend(&md, "\n**Its claims: ", ClaimCounts(judged), "**", judged.empty() ? "." : ":", "\n\n");
  for (const ClaimJudgement& j : judged) absl::StrAppend(&md, "- ", j.text, " — ", j.verdict, "\n");
  if (const std::optional<KeyGain> gain = KeyGainOf(*t); gain.has_value()) {
    absl::StrAppend(&md, KeyGainBlock(*t, *gain));
  } else {
    absl::StrAppend(&md, "\nNo key gain: no claim of this table sets one row against another in every column.\n");
  }
  const Fill fill = FillOf(*t);
  absl::StrAppend(&md, "\n**Cells**: ", fill.filled, " of ", fill.present, " cells whose data is present are filled");
  if (const std::string agreement = AgreementText(*t); !agreement.empty()) absl::StrAppend(&md, "; ", agreement);
  const std::string missing = MissingDatasets(*t);
  absl::StrAppend(&md, "; ", missing.empty() ? "every dataset is present" : absl::StrCat("not present here: ", missing),
                  ".\n");
  // Ours beside the authors' code, where it has been run.
  for (const ReportFile& r : in.reports) {
    if (r.paper == p.paper && r.path == p.paper + "/authors_code.md") {
      absl::StrAppend(&md, "\n**Against the authors' code**: [", r.title, "](", r.path,
                      ") sets our runs beside a port of the authors' code on their own partition.\n");
    }
  }
  // Every claim of the paper's reports, for the whole picture.
  std::vector<ClaimJudgement> all;
  int reports = 0;
  for (const PlannedTable& other : in.tables) {
    if (other.paper != p.paper || other.table.claims().empty()) continue;
    ++reports;
    const std::vector<ClaimJudgement> j = JudgeClaims(other.table, other.cells);
    all.insert(all.end(), j.begin(), j.end());
  }
  absl::StrAppend(&md, "\n**All ", all.size(), " claims of its ", reports, reports == 1 ? " report" : " reports",
                  " with claims**: ", ClaimCounts(all), ".\n");
  return md;
}

std::string ReportLine(const FrontPageInput& in, const ReportFile& r) {
  const std::string stem = r.path.substr(0, r.path.size() - 3);  // without ".md"
  std::string line = absl::StrCat("- [`", stem, "`](", r.path, ")");
  const size_t slash = stem.find_last_of('/');
  const PlannedTable* t = r.from_records ? FindTable(in, r.paper, stem.substr(slash + 1)) : nullptr;
  if (t == nullptr) {
    absl::StrAppend(&line, " ", r.title, ": ",
                    r.generator.empty() ? "legacy report, not generated from the run records"
                                        : absl::StrCat("not a table report (generated by ", r.generator, ")"),
                    ".\n");
    return line;
  }
  const Fill fill = FillOf(*t);
  absl::StrAppend(&line, " ", t->table.title(), ": ", fill.filled, " / ", fill.present, " filled");
  if (const AgreementCount a = CountAgreement(t->table, t->cells);
      a.filled > 0 && (t->table.agreement_min_points() > 0 || IsAccuracy(t->table.value()))) {
    absl::StrAppend(&line, t->table.agreement_min_points() > 0
                               ? absl::StrFormat("; %d / %d agree (± or %g points)", a.within, a.filled,
                                                 t->table.agreement_min_points())
                               : absl::StrFormat("; %d / %d within the paper's ±", a.within, a.filled));
  }
  if (!t->table.claims().empty()) absl::StrAppend(&line, "; claims: ", ClaimCounts(JudgeClaims(t->table, t->cells)));
  absl::StrAppend(&line, ".\n");
  return line;
}

// The overview row of one paper.
std::string OverviewRow(const FrontPageInput& in, const PaperHeadline& p) {
  const PlannedTable* t = FindTable(in, p.paper, p.table);
  const std::string link = absl::StrCat("[`", p.paper, "/", p.table, "`](", p.paper, "/", p.table, ".md)");
  if (t == nullptr) return absl::StrCat("| ", p.name, " | ", link, " | – | – | – |\n");
  std::string gain = "–";
  if (const std::optional<KeyGain> g = KeyGainOf(*t); g.has_value()) {
    int n = 0;
    double ours = 0, paper = 0;
    for (const GainColumn& c : g->columns) {
      if (!c.filled || !c.has_paper) continue;
      ++n;
      ours += c.ours;
      paper += c.paper;
    }
    const int d = AccuracyDecimals(t->table) + 1;
    gain = absl::StrCat(RowLabel(t->table, g->row), " − ", RowLabel(t->table, g->base), ": ",
                        n == 0 ? "–" : absl::StrFormat("%+.*f / %+.*f (%d datasets)", d, ours / n, d, paper / n, n));
  }
  const Fill fill = FillOf(*t);
  return absl::StrCat("| ", p.name, " | ", link, " | ", ClaimCounts(JudgeClaims(t->table, t->cells)), " | ", gain,
                      " | ", fill.filled, " / ", fill.present, " |\n");
}

// Every filled accuracy cell once: (paper, ours %, the paper's %).
struct CellPoint {
  std::string paper;
  double ours, theirs;
};
std::vector<CellPoint> CellPoints(const FrontPageInput& in) {
  std::vector<CellPoint> points;
  std::set<std::string> seen;  // the paper, the cell's runs and the paper's value
  for (const PlannedTable& t : in.tables) {
    for (const proto::Cell& c : t.table.cells()) {
      const CellResult& r = Lookup(t.cells, c.row(), c.column());
      if (r.state != CellResult::State::kDone || r.values.empty() || !c.paper().present() || !IsAccuracy(r.value)) {
        continue;
      }
      std::vector<std::string> runs;
      for (const auto& [key, seconds] : r.recorded_runs) runs.push_back(key);
      if (runs.empty()) runs = {t.stem, c.row(), c.column()};
      std::sort(runs.begin(), runs.end());
      const double scale = Scale(t.table);
      const std::string id = absl::StrCat(t.paper, "|", absl::StrJoin(runs, ","), "|", c.paper().mean() * scale);
      if (!seen.insert(id).second) continue;
      points.push_back({t.paper, MeanStd(r.values).first * scale, c.paper().mean() * scale});
    }
  }
  return points;
}

// The papers in the page's order that appear in `papers`.
std::vector<std::string> Ordered(const FrontPageInput& in, const std::set<std::string>& papers) {
  std::vector<std::string> out;
  for (const PaperHeadline& p : in.papers) {
    if (papers.count(p.paper)) out.push_back(p.paper);
  }
  for (const std::string& p : papers) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

// An axis step that gives 4 to 10 ticks over `span`.
double NiceStep(double span) {
  for (double step : {0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0}) {
    if (span / step <= 10) return step;
  }
  return 100;
}

constexpr double kWidth = 800, kSide = 540, kLeft = 70, kTop = 76;

// A plot range: lowest and highest value on an axis and its tick step.
struct Range {
  double lo, hi, step;
  double Position(double v, double from, double length) const { return from + length * (v - lo) / (hi - lo); }
};

// `lo`..`hi` widened to whole ticks (4 to 10 of them), with 0 in it when `with_zero`.
Range NiceRange(double lo, double hi, bool with_zero) {
  if (with_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  const double step = NiceStep(hi - lo);
  Range r{std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
  if (r.hi <= r.lo) r.hi = r.lo + step;
  return r;
}

// The plot's frame: title, subtitle, grid, ticks, axis titles and the diagonal (ours = the paper's).
std::string Frame(const std::string& title, const std::string& subtitle, const Range& xr, const Range& yr,
                  const std::string& x_title, const std::string& y_title) {
  const double height = kTop + kSide + 60;
  auto x = [&](double v) { return xr.Position(v, kLeft, kSide); };
  auto y = [&](double v) { return kTop + kSide - yr.Position(v, 0, kSide); };
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">%s</text>\n"
      "<text x=\"12\" y=\"44\" fill=\"#444\">%s</text>\n",
      kWidth, height, kWidth, height, Escape(title), Escape(subtitle));
  for (double v = xr.lo; v <= xr.hi + 1e-9; v += xr.step) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n",
        x(v), kTop, x(v), kTop + kSide, x(v), kTop + kSide + 16, xr.step < 1 ? 1 : 0, v));
  }
  for (double v = yr.lo; v <= yr.hi + 1e-9; v += yr.step) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
        kLeft, y(v), kLeft + kSide, y(v), kLeft - 6, y(v) + 4, yr.step < 1 ? 1 : 0, v));
  }
  const double d_lo = std::max(xr.lo, yr.lo), d_hi = std::min(xr.hi, yr.hi);
  absl::StrAppend(&svg, absl::StrFormat(
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n"
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n"
      "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 16 %.1f)\">%s</text>\n",
      kLeft, kTop, kSide, kSide, kLeft + kSide / 2, kTop + kSide + 40, Escape(x_title), kTop + kSide / 2,
      kTop + kSide / 2, Escape(y_title)));
  if (d_lo < d_hi) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-width=\"1.2\"/>\n",
        x(d_lo), y(d_lo), x(d_hi), y(d_hi)));
  }
  return svg;
}

// One legend entry (a coloured mark and up to two lines) at the legend's next slot.
std::string LegendEntry(double& y, const std::string& color, const std::string& mark, const std::string& line1,
                        const std::string& line2 = "") {
  const double x = kLeft + kSide + 16;
  std::string svg = mark == "dash"
                        ? absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                                          "stroke-dasharray=\"5,3\" stroke-width=\"1.5\"/>",
                                          x, y - 4, x + 14, y - 4, color)
                        : absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>", x + 7, y - 4, color);
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 20, y, Escape(line1)));
  if (!line2.empty()) {
    y += 15;
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444\">%s</text>\n",
                                          x + 20, y, Escape(line2)));
  }
  y += 22;
  return svg;
}

}  // namespace

std::optional<KeyGain> KeyGainOf(const PlannedTable& t) {
  for (const proto::Claim& claim : t.table.claims()) {
    std::string base;
    if ((claim.kind() == proto::Claim::GAIN_AT_LEAST || claim.kind() == proto::Claim::MEAN_GAIN_AT_LEAST)) {
      base = claim.base();
    } else if (claim.kind() == proto::Claim::ROW_AT_LEAST_OTHERS && claim.others_size() == 1) {
      base = claim.others(0);
    }
    if (base.empty() || claim.row().empty() || !claim.column().empty()) continue;
    KeyGain gain{claim.row(), base, claim.text(), {}};
    std::map<std::pair<std::string, std::string>, proto::PublishedValue> paper;
    for (const proto::Cell& c : t.table.cells()) paper[{c.row(), c.column()}] = c.paper();
    const auto& spread_rows = t.table.partition_spread().rows();
    const bool spread = std::count(spread_rows.begin(), spread_rows.end(), gain.row) > 0 &&
                        std::count(spread_rows.begin(), spread_rows.end(), gain.base) > 0;
    for (const proto::Column& column : t.table.columns()) {
      GainColumn c;
      c.label = Label(column);
      const auto p_row = paper.find({gain.row, column.key()}), p_base = paper.find({gain.base, column.key()});
      c.has_paper = p_row != paper.end() && p_base != paper.end() && p_row->second.present() &&
                    p_base->second.present();
      if (c.has_paper) c.paper = p_row->second.mean() - p_base->second.mean();
      const CellResult& a = Lookup(t.cells, gain.row, column.key());
      const CellResult& b = Lookup(t.cells, gain.base, column.key());
      double ours_row, ours_base;
      c.filled = OurMean(t.cells, gain.row, column.key(), &ours_row) && OurMean(t.cells, gain.base, column.key(), &ours_base);
      if (!c.filled && !c.has_paper) continue;  // neither side has a number here
      if (c.filled) {
        c.ours = ours_row - ours_base;
        std::vector<double> differences;
        for (const auto& [seed, value] : PairedDifferences(a.values, a.seeds, b.values, b.seeds)) {
          differences.push_back(value);
        }
        c.interval = IntervalOf(differences);
        // The gain on each partition: the table's own, then the spread's (all of them, or no range).
        if (spread) {
          std::vector<double> gains = {c.ours};
          for (uint64_t seed : t.table.partition_spread().partition_seeds()) {
            const auto it_row = t.spread.find({gain.row, column.key()});
            const auto it_base = t.spread.find({gain.base, column.key()});
            if (it_row == t.spread.end() || it_base == t.spread.end() || !it_row->second.count(seed) ||
                !it_base->second.count(seed)) {
              continue;
            }
            const CellResult& sr = it_row->second.at(seed);
            const CellResult& sb = it_base->second.at(seed);
            if (sr.state != CellResult::State::kDone || sb.state != CellResult::State::kDone || sr.values.empty() ||
                sb.values.empty()) {
              continue;
            }
            gains.push_back(MeanStd(sr.values).first - MeanStd(sb.values).first);
          }
          if (gains.size() == static_cast<size_t>(t.table.partition_spread().partition_seeds_size()) + 1) {
            c.partitions = static_cast<int>(gains.size());
            c.partition_low = *std::min_element(gains.begin(), gains.end());
            c.partition_high = *std::max_element(gains.begin(), gains.end());
          }
        }
      } else {
        c.missing = MissingReason(a, b);
      }
      gain.columns.push_back(std::move(c));
    }
    return gain;
  }
  return std::nullopt;
}

std::string FrontPageMarkdown(const FrontPageInput& in) {
  std::string md = absl::StrCat(
      "# Reproduction status: the papers at a glance\n\n"
      "Generated by `bazel run //experiments:front_page` from the run records (`experiments/results/`) and the "
      "tables as data (`experiments/<paper>/*.textproto`, which hold the papers' numbers); "
      "`//experiments:reports_regenerate_test` regenerates it byte for byte. Claims are judged as in every report: "
      "a gain or ordering on the seeds both cells recorded, by the mean difference and its 95% Student-t interval "
      "(*reproduced*: the interval reaches the claimed margin and excludes no gain; *not reproduced*: it lies below "
      "the margin; *inconclusive*: neither, or fewer than 2 seeds); other claims on our cell means (*holds* / *does "
      "not hold*).\n\n"
      "| paper | headline table | its claims | key gain, mean over datasets: ours / the paper's | cells filled / "
      "with data |\n|---|---|---|---|---|\n");
  for (const PaperHeadline& p : in.papers) absl::StrAppend(&md, OverviewRow(in, p));
  absl::StrAppend(&md, "\nBelow: each paper's verdict block, then [every report](#every-report) and [two figures across "
                       "the papers](#figures).\n");
  for (const PaperHeadline& p : in.papers) absl::StrAppend(&md, PaperBlock(in, p));

  absl::StrAppend(&md, "\n## Every report\n\nPer report: its cells filled of those whose data is present; where its "
                       "cells are accuracies, how many lie within the paper's printed ± (or the table's own agreement "
                       "rule); its claims' verdicts.\n");
  std::string paper;
  for (const ReportFile& r : in.reports) {
    if (r.paper != paper) {
      paper = r.paper;
      absl::StrAppend(&md, "\n### ", PaperName(in, paper), "\n\n");
    }
    absl::StrAppend(&md, ReportLine(in, r));
  }

  absl::StrAppend(&md, "\n## Figures\n");
  const std::vector<CellPoint> points = CellPoints(in);
  if (!points.empty()) {
    std::set<std::pair<std::string, double>> bands;
    for (const PlannedTable& t : in.tables) {
      if (t.table.agreement_min_points() > 0) bands.insert({t.paper, t.table.agreement_min_points()});
    }
    std::vector<std::string> band_text;
    for (const auto& [p, b] : bands) band_text.push_back(absl::StrFormat("%s ±%g points", PaperName(in, p), b));
    absl::StrAppend(
        &md, "\n![ours against the paper, every filled accuracy cell](", in.cells_figure, ")\n\n", points.size(),
        " filled accuracy cells of the reports above (a cell that two tables share with the same runs once): our "
        "mean against the paper's, coloured by paper, fractions (F1) as percent. The grey line is ours = the "
        "paper's",
        band_text.empty() ? "" : absl::StrCat("; dashed, the agreement bands of the tables that set one (",
                                              absl::StrJoin(band_text, ", "), ")"),
        ".\n");
  }
  if (const std::string gains = GainsFigureSvg(in); !gains.empty()) {
    absl::StrAppend(&md, "\n![key gains, ours against the paper's](", in.gains_figure,
                    ")\n\nEach paper's key gain (above) per dataset: the paper's on x, ours on y with its paired-seed "
                    "95% interval, in points (F1 fractions × 100; the two axes have their own scales). On the grey line "
                    "ours equals the paper's; below it, ours is smaller.\n");
  }
  return md;
}

std::string CellsFigureSvg(const FrontPageInput& in) {
  const std::vector<CellPoint> points = CellPoints(in);
  if (points.empty()) return "";
  double lo = 100, hi = 0;
  std::map<std::string, int> per_paper;
  for (const CellPoint& p : points) {
    lo = std::min({lo, p.ours, p.theirs});
    hi = std::max({hi, p.ours, p.theirs});
    ++per_paper[p.paper];
  }
  lo = std::floor(lo / 10) * 10;
  hi = std::min(100.0, std::ceil(hi / 10) * 10);
  if (hi <= lo) hi = lo + 10;
  const Range range{lo, hi, NiceStep(hi - lo)};  // one scale on both axes: the diagonal at 45°
  auto x = [&](double v) { return range.Position(v, kLeft, kSide); };
  auto y = [&](double v) { return kTop + kSide - range.Position(v, 0, kSide); };
  std::string svg = Frame("Ours against the paper: every filled accuracy cell",
                          absl::StrCat(points.size(), " cells, mean over seeds, in % (F1 fractions × 100); grey: ours = the paper's"),
                          range, range, "the paper's value (%)", "ours (%)");
  // The agreement bands of the tables that set one: dashed lines at ± the band, in the paper's colour.
  std::set<std::pair<std::string, double>> bands;
  for (const PlannedTable& t : in.tables) {
    if (t.table.agreement_min_points() > 0) bands.insert({t.paper, t.table.agreement_min_points()});
  }
  for (const auto& [paper, b] : bands) {
    for (double sign : {1.0, -1.0}) {
      const double x0 = sign > 0 ? lo : lo + b, x1 = sign > 0 ? hi - b : hi;
      absl::StrAppend(&svg, absl::StrFormat(
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"5,3\"/>\n", x(x0),
          y(x0 + sign * b), x(x1), y(x1 + sign * b), PaperColor(in, paper)));
    }
  }
  for (const CellPoint& p : points) {
    absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" fill-opacity=\"0.6\"/>\n",
                                          x(p.theirs), y(p.ours), PaperColor(in, p.paper)));
  }
  double legend_y = kTop + 10;
  std::set<std::string> papers;
  for (const auto& [paper, n] : per_paper) papers.insert(paper);
  for (const std::string& paper : Ordered(in, papers)) {
    absl::StrAppend(&svg, LegendEntry(legend_y, PaperColor(in, paper), "dot", PaperName(in, paper),
                                      absl::StrCat(per_paper[paper], " cells")));
  }
  for (const auto& [paper, b] : bands) {
    absl::StrAppend(&svg, LegendEntry(legend_y, PaperColor(in, paper), "dash", absl::StrFormat("±%g points", b),
                                      absl::StrCat("agreement, ", PaperName(in, paper))));
  }
  return svg + "</svg>\n";
}

std::string GainsFigureSvg(const FrontPageInput& in) {
  struct GainPoint {
    std::string paper;
    double paper_gain, ours, low, high;
    bool interval;
  };
  std::vector<GainPoint> points;
  std::map<std::string, std::pair<std::string, int>> legend;  // paper -> (row − base, datasets)
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  for (const PaperHeadline& p : in.papers) {
    const PlannedTable* t = FindTable(in, p.paper, p.table);
    if (t == nullptr) continue;
    const std::optional<KeyGain> g = KeyGainOf(*t);
    if (!g.has_value()) continue;
    const double s = Scale(t->table);
    for (const GainColumn& c : g->columns) {
      if (!c.filled || !c.has_paper) continue;
      const bool interval = c.interval.has_interval;
      points.push_back({p.paper, c.paper * s, c.ours * s, interval ? c.interval.low * s : c.ours * s,
                        interval ? c.interval.high * s : c.ours * s, interval});
      x_lo = std::min(x_lo, points.back().paper_gain);
      x_hi = std::max(x_hi, points.back().paper_gain);
      y_lo = std::min(y_lo, points.back().low);
      y_hi = std::max(y_hi, points.back().high);
      auto& [name, n] = legend[p.paper];
      name = absl::StrCat(RowLabel(t->table, g->row), " − ", RowLabel(t->table, g->base));
      ++n;
    }
  }
  if (points.empty()) return "";
  // Each axis on its own scale (the papers' gains span less than ours): the diagonal is not at 45°.
  const Range xr = NiceRange(x_lo, x_hi, true), yr = NiceRange(y_lo, y_hi, true);
  auto x = [&](double v) { return xr.Position(v, kLeft, kSide); };
  auto y = [&](double v) { return kTop + kSide - yr.Position(v, 0, kSide); };
  std::string svg = Frame("Key gains: ours against the paper's, per dataset",
                          "in points (F1 fractions × 100); bars: our paired-seed 95% interval; grey: ours = the paper's",
                          xr, yr, "the paper's gain (points)", "our gain (points)");
  // The zero lines: no gain.
  absl::StrAppend(&svg, absl::StrFormat(
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\" stroke-dasharray=\"2,2\"/>"
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\" stroke-dasharray=\"2,2\"/>\n",
      x(xr.lo), y(0), x(xr.hi), y(0), x(0), y(yr.lo), x(0), y(yr.hi)));
  for (const GainPoint& p : points) {
    const char* color = PaperColor(in, p.paper);
    if (p.interval) {
      absl::StrAppend(&svg, absl::StrFormat(
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-opacity=\"0.6\"/>"
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-opacity=\"0.6\"/>"
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-opacity=\"0.6\"/>\n",
          x(p.paper_gain), y(p.low), x(p.paper_gain), y(p.high), color, x(p.paper_gain) - 3, y(p.low),
          x(p.paper_gain) + 3, y(p.low), color, x(p.paper_gain) - 3, y(p.high), x(p.paper_gain) + 3, y(p.high),
          color));
    }
    absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", x(p.paper_gain),
                                          y(p.ours), color));
  }
  double legend_y = kTop + 10;
  std::set<std::string> papers;
  for (const auto& [paper, entry] : legend) papers.insert(paper);
  for (const std::string& paper : Ordered(in, papers)) {
    const auto& [name, n] = legend[paper];
    absl::StrAppend(&svg, LegendEntry(legend_y, PaperColor(in, paper), "dot",
                                      absl::StrCat(PaperName(in, paper), " (", n, ")"), name));
  }
  return svg + "</svg>\n";
}

}  // namespace fgl::experiments
