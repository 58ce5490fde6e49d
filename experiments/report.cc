#include "experiments/report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include <google/protobuf/text_format.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "experiments/paired_interval.h"

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

// A row's or column's printed label, else its key.
template <typename T>
std::string Label(const T& row_or_column) {
  return row_or_column.label().empty() ? row_or_column.key() : row_or_column.label();
}

std::string RowLabel(const proto::Table& t, const std::string& key) {
  for (const proto::Row& r : t.rows()) {
    if (r.key() == key) return Label(r);
  }
  return key;
}

// Our mean of a filled cell.
bool OurMean(const std::map<std::pair<std::string, std::string>, CellResult>& cells, const std::string& row,
             const std::string& col, double* mean) {
  const CellResult& r = Lookup(cells, row, col);
  if (r.state != CellResult::State::kDone || r.values.empty()) return false;
  *mean = MeanStd(r.values).first;
  return true;
}

// Every comparison a claim makes: "lhs >= rhs + min", named for the report.
struct Comparison {
  std::string what;
  double lhs = 0, rhs = 0, min = 0;
  double tolerance = -1;  // >= 0: an equality, |lhs − rhs| <= tolerance (MATCHES_PAPER)
  std::vector<std::pair<std::string, std::string>> reads;  // the (row, column) cells compared
  // Gain and ordering claims: lhs − rhs per seed both sides recorded (paired_interval.h).
  std::map<uint64_t, double> differences;
  bool paired = false;
  bool Holds() const { return tolerance >= 0 ? std::abs(lhs - rhs) <= tolerance : lhs - rhs >= min - 1e-9; }
  double Slack() const { return tolerance >= 0 ? tolerance - std::abs(lhs - rhs) : lhs - rhs - min; }
};

// Half a unit of the last digit the paper prints: two decimals below 10^4, three significant
// digits from 10^4 on (as FormatCell prints communication).
double PrintedPrecision(double value) {
  const double magnitude = std::abs(value);
  if (magnitude < 1e4) return 0.005;
  return 0.5 * std::pow(10.0, std::floor(std::log10(magnitude)) - 2);
}

std::vector<Comparison> Comparisons(const proto::Table& t, const proto::Claim& claim,
                                    const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::vector<Comparison> out;
  auto columns = [&] {
    std::vector<std::string> keys;
    for (const proto::Column& c : t.columns()) {
      if (claim.column().empty() || c.key() == claim.column()) keys.push_back(c.key());
    }
    return keys;
  };
  auto differences = [&](const std::string& a_row, const std::string& a_col, const std::string& b_row,
                         const std::string& b_col) {
    const CellResult& a = Lookup(cells, a_row, a_col);
    const CellResult& b = Lookup(cells, b_row, b_col);
    return PairedDifferences(a.values, a.seeds, b.values, b.seeds);
  };
  auto compare = [&](const std::string& a, const std::string& b, const std::string& col, double min) {
    double x, y;
    if (OurMean(cells, a, col, &x) && OurMean(cells, b, col, &y)) {
      Comparison c{absl::StrCat(a, " vs ", b, " on ", col), x, y, min, -1, {{a, col}, {b, col}}};
      c.differences = differences(a, col, b, col);
      c.paired = true;
      out.push_back(std::move(c));
    }
  };
  switch (claim.kind()) {
    case proto::Claim::ROW_AT_LEAST_OTHERS:
      for (const std::string& col : columns()) {
        for (const proto::Row& r : t.rows()) {
          const bool listed = claim.others().empty() ||
                              std::find(claim.others().begin(), claim.others().end(), r.key()) != claim.others().end();
          if (r.key() != claim.row() && listed) compare(claim.row(), r.key(), col, 0);
        }
      }
      break;
    case proto::Claim::GAIN_AT_LEAST:
      for (const std::string& col : columns()) compare(claim.row(), claim.base(), col, claim.min());
      break;
    case proto::Claim::PLUGIN_IMPROVES_BASE:
      for (const proto::Row& r : t.rows()) {
        const std::string& key = r.key();
        if (claim.suffix().empty() || key.size() <= claim.suffix().size() ||
            key.compare(key.size() - claim.suffix().size(), claim.suffix().size(), claim.suffix()) != 0) {
          continue;
        }
        for (const std::string& col : columns()) compare(key, key.substr(0, key.size() - claim.suffix().size()), col, 0);
      }
      break;
    case proto::Claim::MEAN_GAIN_AT_LEAST: {
      double sum_row = 0, sum_base = 0;
      int n = 0;
      std::vector<std::pair<std::string, std::string>> reads;
      // Per seed, the mean gain over the columns: the seeds every compared column recorded.
      std::map<uint64_t, std::pair<double, int>> per_seed;
      for (const std::string& col : columns()) {
        double x, y;
        if (OurMean(cells, claim.row(), col, &x) && OurMean(cells, claim.base(), col, &y)) {
          sum_row += x;
          sum_base += y;
          ++n;
          reads.insert(reads.end(), {{claim.row(), col}, {claim.base(), col}});
          for (const auto& [seed, d] : differences(claim.row(), col, claim.base(), col)) {
            per_seed[seed].first += d;
            ++per_seed[seed].second;
          }
        }
      }
      if (n > 0) {
        Comparison c{absl::StrFormat("%s vs %s, mean over %d columns (gain %+.2f)", claim.row(), claim.base(), n,
                                     (sum_row - sum_base) / n),
                     sum_row / n, sum_base / n, claim.min(), -1, std::move(reads)};
        for (const auto& [seed, sum_count] : per_seed) {
          if (sum_count.second == n) c.differences[seed] = sum_count.first / n;
        }
        c.paired = true;
        out.push_back(std::move(c));
      }
      break;
    }
    case proto::Claim::PEAK_ROUND_AT_MOST: {
      const CellResult& r = Lookup(cells, claim.row(), claim.column());
      if (r.state != CellResult::State::kDone || r.curve_runs == 0 || r.curve_sum.empty()) break;
      const auto peak = std::max_element(r.curve_sum.begin(), r.curve_sum.end());  // the first maximum
      const double peak_round = static_cast<double>(peak - r.curve_sum.begin() + 1);
      const std::string where = absl::StrCat(claim.row(), " on ", claim.column());
      out.push_back({absl::StrCat(where, ": peak round (at most ", claim.min(), ")"), claim.min(), peak_round, 0, -1,
                     {{claim.row(), claim.column()}}});
      // Declines: the last round's mean lies below the peak (by any amount).
      out.push_back({absl::StrCat(where, ": peak minus last round"), *peak / r.curve_runs,
                     r.curve_sum.back() / r.curve_runs, 1e-6, -1, {{claim.row(), claim.column()}}});
      break;
    }
    case proto::Claim::COLUMN_AT_LEAST_OTHERS:
      for (const proto::Row& r : t.rows()) {
        if (!claim.row().empty() && r.key() != claim.row()) continue;
        for (const proto::Column& c : t.columns()) {
          const bool listed = claim.others().empty() ||
                              std::find(claim.others().begin(), claim.others().end(), c.key()) != claim.others().end();
          double x, y;
          if (c.key() != claim.column() && listed && OurMean(cells, r.key(), claim.column(), &x) &&
              OurMean(cells, r.key(), c.key(), &y)) {
            Comparison cmp{absl::StrCat(r.key(), ": ", claim.column(), " vs ", c.key()), x, y, 0, -1,
                           {{r.key(), claim.column()}, {r.key(), c.key()}}};
            cmp.differences = differences(r.key(), claim.column(), r.key(), c.key());
            cmp.paired = true;
            out.push_back(std::move(cmp));
          }
        }
      }
      break;
    case proto::Claim::CELLS_AT_MOST:
      for (const proto::Row& r : t.rows()) {
        if (!claim.row().empty() && r.key() != claim.row()) continue;
        for (const std::string& col : columns()) {
          double x;
          if (OurMean(cells, r.key(), col, &x)) {
            out.push_back({absl::StrCat(r.key(), " on ", col, " (bound vs value)"), claim.min(), x, 0, -1, {{r.key(), col}}});
          }
        }
      }
      break;
    case proto::Claim::MATCHES_PAPER:
      for (const proto::Cell& cell : t.cells()) {
        double ours;
        if ((!claim.row().empty() && cell.row() != claim.row()) ||
            (!claim.column().empty() && cell.column() != claim.column()) || !cell.paper().present() ||
            !OurMean(cells, cell.row(), cell.column(), &ours)) {
          continue;
        }
        Comparison c{absl::StrCat(cell.row(), " on ", cell.column()), ours, cell.paper().mean(), 0, -1,
                     {{cell.row(), cell.column()}}};
        c.tolerance = claim.min() > 0 ? claim.min() : PrintedPrecision(cell.paper().mean());
        out.push_back(c);
      }
      break;
    default:
      break;
  }
  return out;
}

// A cell that will hold a value once its runs are made (not run, stale, failed, or its row not
// implemented yet), as opposed to one whose data is absent or that the table does not print.
bool AwaitsRuns(CellResult::State s) {
  return s == CellResult::State::kNotRun || s == CellResult::State::kStale || s == CellResult::State::kFailed ||
         s == CellResult::State::kNotImplemented;
}

// `cells` as they will be once every cell awaiting runs is filled (with placeholder values).
std::map<std::pair<std::string, std::string>, CellResult> Completed(
    const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::map<std::pair<std::string, std::string>, CellResult> complete = cells;
  for (auto& [key, r] : complete) {
    if (!AwaitsRuns(r.state)) continue;
    r.state = CellResult::State::kDone;
    r.values = {0};
    r.seeds.clear();
    r.curve_sum = {0};
    r.curve_runs = 1;
  }
  return complete;
}

// How many cells a claim would compare on the `complete` cells that are not filled now: a
// verdict on the filled ones alone is only "so far".
int CellsAwaitingRuns(const proto::Table& t, const proto::Claim& claim,
                      const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                      const std::map<std::pair<std::string, std::string>, CellResult>& complete) {
  std::set<std::pair<std::string, std::string>> awaiting;
  for (const Comparison& c : Comparisons(t, claim, complete)) {
    for (const auto& cell : c.reads) {
      if (AwaitsRuns(Lookup(cells, cell.first, cell.second).state)) awaiting.insert(cell);
    }
  }
  return static_cast<int>(awaiting.size());
}

// How many comparisons hold, and the one with the least slack.
struct Tally {
  int holds = 0;
  const Comparison* worst = nullptr;
  bool all_hold(const std::vector<Comparison>& all) const { return holds == static_cast<int>(all.size()); }
};
template <typename Holds>
Tally Count(const std::vector<Comparison>& all, Holds holds) {
  Tally t;
  for (const Comparison& c : all) {
    t.holds += holds(c);
    if (t.worst == nullptr || c.Slack() < t.worst->Slack()) t.worst = &c;
  }
  return t;
}

// The paper's printed means as filled cells.
std::map<std::pair<std::string, std::string>, CellResult> PaperCells(const proto::Table& t) {
  std::map<std::pair<std::string, std::string>, CellResult> paper_cells;
  for (const proto::Cell& c : t.cells()) {
    if (!c.paper().present()) continue;
    CellResult& r = paper_cells[{c.row(), c.column()}];
    r.state = CellResult::State::kDone;
    r.values = {c.paper().mean()};
  }
  return paper_cells;
}

// The same claim checked on the paper's own printed means (every printed cell), so that a claim
// its own table contradicts reads as such. Empty for claims about our numbers against the paper's
// (MATCHES_PAPER) and for those no printed pair can check (curves).
std::string OnPaperNumbers(const proto::Table& t, const proto::Claim& claim,
                           const std::map<std::pair<std::string, std::string>, CellResult>& paper_cells) {
  if (claim.kind() == proto::Claim::MATCHES_PAPER) return "";
  const std::vector<Comparison> all = Comparisons(t, claim, paper_cells);
  if (all.empty()) return "";
  // To the paper's printed precision: its "+2.31 on average" is a rounded mean of rounded cells.
  const double printed = t.fraction() ? 0.0005 : 0.005;
  const Tally tally = Count(all, [&](const Comparison& c) { return c.Slack() >= -printed; });
  if (tally.all_hold(all)) {
    return absl::StrCat(" (on the paper's own numbers: holds, ", tally.holds, " of ", all.size(), ")");
  }
  const int d = t.fraction() ? 3 : 2;  // as the papers print them
  return absl::StrFormat(" (on the paper's own numbers: does not hold, %d of %d; worst %s: %.*f vs %.*f)", tally.holds,
                         all.size(), tally.worst->what, d, tally.worst->lhs, d, tally.worst->rhs);
}

// A gain or ordering claim judged on paired-seed intervals (paired_interval.h): the claim's
// verdict, the count of each comparison's verdict, and the least favourable comparison with it.
// `on_means`: the claim's comparisons counted on the cell means (reported beside the verdict).
std::string PairedVerdict(const proto::Table& t, const std::vector<Comparison>& all, const Tally& on_means,
                          int awaiting, bool aggregate) {
  int counts[3] = {0, 0, 0};
  std::vector<PairedInterval> intervals;
  std::vector<Verdict> verdicts;
  for (const Comparison& c : all) {
    std::vector<double> d;
    for (const auto& [seed, value] : c.differences) d.push_back(value);
    intervals.push_back(IntervalOf(d));
    verdicts.push_back(Judge(intervals.back(), c.min));
    ++counts[static_cast<int>(verdicts.back())];
  }
  const int reproduced = counts[static_cast<int>(Verdict::kReproduced)];
  const int not_reproduced = counts[static_cast<int>(Verdict::kNotReproduced)];
  const Verdict verdict = not_reproduced > 0                                   ? Verdict::kNotReproduced
                          : reproduced == static_cast<int>(all.size()) ? Verdict::kReproduced
                                                                               : Verdict::kInconclusive;
  // Shown: of the comparisons that carry the claim's verdict, the one whose mean difference is
  // farthest below the claimed margin.
  size_t shown = all.size();
  for (size_t i = 0; i < all.size(); ++i) {
    if (verdicts[i] != verdict) continue;
    if (shown == all.size() || intervals[i].mean - all[i].min < intervals[shown].mean - all[shown].min) shown = i;
  }
  const Comparison* least = &all[shown];
  const PairedInterval& least_interval = intervals[shown];
  const bool so_far = awaiting > 0 && (verdict != Verdict::kNotReproduced || aggregate);
  const int d = AccuracyDecimals(t);
  std::string out = absl::StrCat("**", VerdictName(verdict), so_far ? " so far" : "", "**: ", reproduced,
                                 " reproduced, ", not_reproduced, " not reproduced, ",
                                 counts[static_cast<int>(Verdict::kInconclusive)], " inconclusive of ", all.size(),
                                 all.size() == 1 ? " comparison" : " comparisons");
  if (least_interval.has_interval) {
    absl::StrAppend(&out, absl::StrFormat("; least favourable %s: %+.*f [%+.*f, %+.*f] over %d seeds (claimed %+.*f)",
                                          least->what, d, least_interval.mean, d, least_interval.low, d,
                                          least_interval.high, least_interval.n, d, least->min));
  } else {
    absl::StrAppend(&out, absl::StrFormat("; least favourable %s: %+.*f over %d %s, no interval (claimed %+.*f)",
                                          least->what, d, least->lhs - least->rhs, least_interval.n,
                                          least_interval.n == 1 ? "seed" : "seeds", d, least->min));
  }
  absl::StrAppend(&out, "; on our means: ", on_means.all_hold(all) ? "holds" : "does not hold", ", ", on_means.holds,
                  " of ", all.size());
  return out;
}

std::string ClaimsSection(const proto::Table& t,
                          const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  if (t.claims().empty()) return "";
  std::string md =
      "\n**Claims** (the paper's. A gain or ordering is judged per comparison on the seeds both cells recorded: "
      "the mean difference and its 95% Student-t interval. *Reproduced*: the interval reaches the claimed margin "
      "and excludes no gain; *not reproduced*: it lies below the margin; *inconclusive*: neither, or fewer than 2 "
      "seeds. A claim is not reproduced when one of its comparisons is not, reproduced when all are. Other claims "
      "are checked on our cell means. \"so far\" when cells the claim compares still await runs):\n\n";
  const auto complete = Completed(cells);
  const auto paper_cells = PaperCells(t);
  for (const proto::Claim& claim : t.claims()) {
    const std::vector<Comparison> all = Comparisons(t, claim, cells);
    const int awaiting = CellsAwaitingRuns(t, claim, cells, complete);
    // A per-cell claim ("in every column") is refuted by one failing comparison; a mean over
    // columns may still change with the missing ones.
    const bool aggregate = claim.kind() == proto::Claim::MEAN_GAIN_AT_LEAST;
    const Tally tally = Count(all, [](const Comparison& c) { return c.Holds(); });
    const int holds = tally.holds;
    const Comparison* worst = tally.worst;
    std::string verdict;
    if (!all.empty() && all.front().paired) {
      verdict = PairedVerdict(t, all, tally, awaiting, aggregate);
      if (awaiting > 0) {
        absl::StrAppend(&verdict, "; ", awaiting, awaiting == 1 ? " cell it compares still awaits" : " cells it compares still await", " runs");
      }
    } else if (all.empty()) {
      verdict = awaiting > 0 ? absl::StrCat("not checkable yet: ", awaiting == 1 ? "the cell it compares awaits"
                                                                                : absl::StrCat("the ", awaiting, " cells it compares await"),
                                            " runs")
                             : "not checkable here (no cells it compares can be filled on this machine)";
    } else {
      const bool all_hold = tally.all_hold(all);
      const bool so_far = awaiting > 0 && (all_hold || aggregate);
      verdict = absl::StrCat(all_hold ? "**holds" : "**does not hold", so_far ? " so far**" : "**", ": ", holds,
                             " of ", all.size(), " comparisons");
      if (holds < static_cast<int>(all.size()) && worst->tolerance >= 0) {
        absl::StrAppend(&verdict, absl::StrFormat("; worst %s: ours %.6g vs the paper's %.6g", worst->what,
                                                  worst->lhs, worst->rhs));
      } else if (holds < static_cast<int>(all.size())) {
        const int d = AccuracyDecimals(t);
        absl::StrAppend(&verdict, absl::StrFormat("; worst %s: %.*f vs %.*f (needs a margin of %+.*f)", worst->what,
                                                  d, worst->lhs, d, worst->rhs, d, worst->min));
      }
      if (awaiting > 0) {
        absl::StrAppend(&verdict, "; ", awaiting, awaiting == 1 ? " cell it compares still awaits" : " cells it compares still await", " runs");
      }
    }
    absl::StrAppend(&verdict, OnPaperNumbers(t, claim, paper_cells));
    absl::StrAppend(&md, "- ", claim.text(), " — ", verdict, "\n");
  }
  return md;
}

// How many filled cells lie within max(the paper's std, agreement_min_points) of its mean.
std::string AgreementSection(const proto::Table& t,
                             const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  if (t.agreement_min_points() <= 0) return "";
  std::map<std::string, std::pair<int, int>> per_row;  // row -> (within, filled)
  for (const proto::Cell& c : t.cells()) {
    double ours;
    if (!c.paper().present() || !OurMean(cells, c.row(), c.column(), &ours)) continue;
    const double band = std::max(c.paper().std(), t.agreement_min_points());
    auto& [within, filled] = per_row[c.row()];
    within += std::abs(ours - c.paper().mean()) <= band + 1e-9;
    ++filled;
  }
  int within = 0, filled = 0;
  std::vector<std::string> rows;
  for (const proto::Row& r : t.rows()) {
    auto it = per_row.find(r.key());
    if (it == per_row.end()) continue;
    within += it->second.first;
    filled += it->second.second;
    rows.push_back(absl::StrCat(Label(r), " ", it->second.first, "/", it->second.second));
  }
  return absl::StrFormat(
      "\n**Agreement with the paper**: %d of %d filled cells lie within the paper's std of its mean, or within "
      "%g points where that is larger. Per row: %s.\n",
      within, filled, t.agreement_min_points(), rows.empty() ? "none filled" : absl::StrJoin(rows, ", "));
}

}  // namespace

int AccuracyDecimals(const proto::Table& t) { return t.fraction() ? 3 : 1; }

int64_t SelectedTensorBytes(const std::map<std::string, int64_t>& by_group, const std::vector<std::string>& groups) {
  std::set<std::string> included, excluded;
  for (const std::string& g : groups) (!g.empty() && g[0] == '-' ? excluded : included).insert(g.substr(g[0] == '-'));
  int64_t total = 0;
  for (const auto& [group, bytes] : by_group) {
    if (excluded.count(group) || (!included.empty() && !included.count(group))) continue;
    total += bytes;
  }
  return total;
}

RunCost UncountedRuns(const CellResult& cell, std::set<std::string>& counted) {
  if (cell.recorded_runs.empty()) return {static_cast<int>(cell.values.size()), cell.run_seconds};
  RunCost cost;
  for (const auto& [key, seconds] : cell.recorded_runs) {
    if (!counted.insert(key).second) continue;
    ++cost.runs;
    cost.seconds += seconds;
  }
  return cost;
}

double ClientReportValue(const std::map<std::string, std::vector<double>>& reports, const std::string& report,
                         int client) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto it = reports.find(report);
  if (it == reports.end()) return nan;
  const std::vector<double>& v = it->second;
  if (client >= 0) return client < static_cast<int>(v.size()) ? v[client] : nan;
  double sum = 0;
  int n = 0;
  for (double x : v) {
    if (std::isfinite(x)) sum += x, ++n;
  }
  return n == 0 ? nan : sum / n;
}

bool IsAccuracy(proto::Table::Value value) {
  return value == proto::Table::TEST_ACCURACY || value == proto::Table::GLOBAL_TEST_ACCURACY;
}

std::string FormatCell(const CellResult& r, const proto::PublishedValue& paper, proto::Table::Value value,
                       int decimals) {
  const bool mib = value == proto::Table::UPLOADED_MIB;
  const bool tensor_mib = value == proto::Table::UPLOADED_TENSOR_MIB;
  const bool minutes = value == proto::Table::TRAINING_MINUTES;
  // Communication is deterministic and printed as the paper prints it: 2 decimals, or 3
  // significant digits in e-notation from 10^4 on.
  auto amount = [](double v) { return v < 1e4 ? absl::StrFormat("%.2f", v) : absl::StrFormat("%.3e", v); };
  // FedEgo prints whole MiB: ours to one decimal beside it.
  auto tensor_amount = [](double v) { return absl::StrFormat("%.1f", v); };
  const std::string published = !paper.present()    ? "–"
                                : mib               ? amount(paper.mean())
                                : tensor_mib        ? absl::StrFormat("%g", paper.mean())
                                : minutes           ? absl::StrFormat("%g", paper.mean())
                                : paper.std() == 0 ? absl::StrFormat("%.*f", decimals, paper.mean())  // no ± printed
                                                 : absl::StrFormat("%.*f ± %.*f", decimals, paper.mean(), decimals, paper.std());
  switch (r.state) {
    case CellResult::State::kNotImplemented:
      return absl::StrCat("not implemented / ", published);
    case CellResult::State::kDataNotPresent:
      return absl::StrCat("no data / ", published);
    case CellResult::State::kFailed:
      return absl::StrCat("RUN FAILED / ", published);
    case CellResult::State::kNotPrinted:
      return "–";
    case CellResult::State::kStale:
      return absl::StrCat("stale / ", published);
    case CellResult::State::kNotRun:
      if (r.seeds_recorded > 0) return absl::StrCat(r.seeds_recorded, " of ", r.seeds_wanted, " seeds / ", published);
      return absl::StrCat("not run / ", published);
    case CellResult::State::kDone:
      break;
  }
  auto [mean, std] = MeanStd(r.values);
  // Byte counts are deterministic: a spread over seeds is worth saying.
  auto seeds_differ = [&] {
    const double spread = *std::max_element(r.values.begin(), r.values.end()) -
                          *std::min_element(r.values.begin(), r.values.end());
    return spread == 0 ? std::string() : absl::StrFormat(" (seeds differ by %g)", spread);
  };
  if (mib) {
    return absl::StrCat(amount(mean), seeds_differ(), " (up+down ", amount(MeanStd(r.traffic_mib).first), ") / ",
                        published);
  }
  if (tensor_mib) return absl::StrCat(tensor_amount(mean), seeds_differ(), " / ", published);
  if (minutes) return absl::StrFormat("%.1f ± %.1f / %s", mean, std, published);
  if (value == proto::Table::CLIENT_REPORT) return absl::StrFormat("%.4f ± %.4f / %s", mean, std, published);
  return absl::StrFormat("%.*f ± %.*f / %s", decimals, mean, decimals, std, published);
}

namespace {

// Each row's gain over the "fedavg" row beside the paper's gain, per cell; empty when the table
// has no fedavg row or no comparable cell.
// Each row's gain over its base row, ours beside the paper's: over FedAvg when the table has a
// "fedavg" row; over the row without `plugin_suffix` for plug-in rows (Table 3's "X_fedtad").
std::string GainSection(const proto::Table& t,
                        const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                        const std::map<std::pair<std::string, std::string>, proto::PublishedValue>& paper,
                        const std::string& plugin_suffix) {
  std::set<std::string> keys;
  for (const proto::Row& r : t.rows()) keys.insert(r.key());
  auto base_of = [&](const std::string& row) -> std::string {
    if (plugin_suffix.empty()) return keys.count("fedavg") && row != "fedavg" ? "fedavg" : "";
    if (row.size() <= plugin_suffix.size() ||
        row.compare(row.size() - plugin_suffix.size(), plugin_suffix.size(), plugin_suffix) != 0) {
      return "";
    }
    const std::string base = row.substr(0, row.size() - plugin_suffix.size());
    return keys.count(base) ? base : "";
  };
  auto mean_of = [&](const std::string& row, const std::string& col, double* ours, double* theirs) {
    const CellResult& r = Lookup(cells, row, col);
    auto it = paper.find({row, col});
    if (r.state != CellResult::State::kDone || it == paper.end() || !it->second.present() || !IsAccuracy(r.value)) {
      return false;
    }
    *ours = MeanStd(r.values).first;
    *theirs = it->second.mean();
    return true;
  };
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(Label(c));
  header.push_back("summary");
  // The "fedavg" row under its printed label (FedMpa's Table 2 calls FedAvg of a GCN "FedGCN").
  const std::string base_name = plugin_suffix.empty() ? RowLabel(t, "fedavg") : "its base method";
  std::string md = absl::StrCat(
      "\n**Gain over ", base_name, "** (what the papers claim): ours (row − ", base_name,
      ", same partition and seeds) / the paper's, ✓ when they are within ", t.fraction() ? "0.02" : "2 points",
      ". Computed from the cells above.\n\n| ",
      absl::StrJoin(header, " | "), " |\n|");
  for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  int rows = 0;
  for (const proto::Row& r : t.rows()) {
    const std::string base = base_of(r.key());
    if (base.empty()) continue;
    std::vector<std::string> line = {Label(r)};
    int n = 0, within = 0, ahead = 0;
    double sum_ours = 0, sum_paper = 0;
    for (const proto::Column& c : t.columns()) {
      double ours, theirs, base_ours, base_theirs;
      if (!mean_of(r.key(), c.key(), &ours, &theirs) || !mean_of(base, c.key(), &base_ours, &base_theirs)) {
        line.push_back("–");
        continue;
      }
      const double g = ours - base_ours, gp = theirs - base_theirs;
      const bool ok = std::abs(g - gp) <= (t.fraction() ? 0.02 : 2.0);
      ++n;
      within += ok;
      ahead += g > 0;
      sum_ours += g;
      sum_paper += gp;
      const int d = AccuracyDecimals(t);
      line.push_back(absl::StrFormat("%+.*f / %+.*f%s", d, g, d, gp, ok ? " ✓" : ""));
    }
    if (n == 0) continue;
    ++rows;
    line.push_back(absl::StrFormat("within %s in %d/%d; ahead of %s in %d/%d; mean %+.*f (paper %+.*f)",
                                   t.fraction() ? "0.02" : "2", within, n,
                                   plugin_suffix.empty() ? "FedAvg" : "the base", ahead, n, t.fraction() ? 4 : 2,
                                   sum_ours / n, t.fraction() ? 4 : 2, sum_paper / n));
    absl::StrAppend(&md, "| ", absl::StrJoin(line, " | "), " |\n");
  }
  return rows == 0 ? "" : md;
}

}  // namespace

namespace {

// What the filled cells cost to compute, from the runs' own logs: the regeneration budget. A run
// read by several columns (Table 7's accuracies, costs and minutes all come from one run) counts
// once, in the first row that reads it.
std::string ComputeLine(const proto::Table& t, const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  double total = 0;
  size_t runs = 0;
  std::set<std::string> counted;  // record keys
  std::vector<std::string> by_row;
  for (const proto::Row& r : t.rows()) {
    double row_s = 0;
    for (const proto::Column& c : t.columns()) {
      auto it = cells.find({r.key(), c.key()});
      if (it == cells.end() || it->second.state != CellResult::State::kDone) continue;
      const RunCost cost = UncountedRuns(it->second, counted);
      row_s += cost.seconds;
      runs += cost.runs;
    }
    total += row_s;
    if (row_s > 0) by_row.push_back(absl::StrFormat("%s %.2f", Label(r), row_s / 3600));
  }
  if (runs == 0) return "";
  return absl::StrFormat(
      "\n**Compute.** The %d runs behind the filled cells took %.2f h of wall time when they ran "
      "(each run's own log; one thread per run, so two run side by side on a 2-core machine). "
      "By row, in hours: %s.\n",
      runs, total / 3600, absl::StrJoin(by_row, "; "));
}

}  // namespace

namespace {

// Per (row, column) of the spread rows: the range of the per-partition means (the table's own
// partition and the spread's) beside the paper's ±.
std::string SpreadSection(const proto::Table& t,
                          const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                          const std::map<std::pair<std::string, std::string>, proto::PublishedValue>& paper,
                          const PartitionSpread& spread) {
  if (t.partition_spread().rows().empty()) return "";
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(Label(c));
  std::string md = absl::StrCat(
      "\n**Partition spread**: the mean over training seeds on each of ", t.partition_spread().partition_seeds_size() + 1,
      " partitions (partition seeds: the table's and ", absl::StrJoin(t.partition_spread().partition_seeds(), ", "),
      "), as lowest–highest (range) / the paper's ±. A range wider than the paper's ± means the partition alone "
      "moves the number more than the paper's error bar.\n\n| ",
      absl::StrJoin(header, " | "), " |\n|");
  for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  for (const std::string& row : t.partition_spread().rows()) {
    std::vector<std::string> line = {RowLabel(t, row)};
    for (const proto::Column& c : t.columns()) {
      const auto key = std::make_pair(row, c.key());
      std::vector<const CellResult*> parts = {&Lookup(cells, row, c.key())};
      auto it = spread.find(key);
      for (uint64_t seed : t.partition_spread().partition_seeds()) {
        parts.push_back(it == spread.end() || !it->second.count(seed) ? nullptr : &it->second.at(seed));
      }
      double lo = 1e9, hi = -1e9;
      bool complete = true;
      for (const CellResult* part : parts) {
        if (part == nullptr || part->state != CellResult::State::kDone || part->values.empty()) {
          complete = false;
          break;
        }
        const double mean = MeanStd(part->values).first;
        lo = std::min(lo, mean);
        hi = std::max(hi, mean);
      }
      auto published = paper.find(key);
      const std::string theirs = published != paper.end() && published->second.present()
                                     ? absl::StrFormat("± %.1f", published->second.std())
                                     : "–";
      line.push_back(complete ? absl::StrFormat("%.1f–%.1f (%.1f) / %s", lo, hi, hi - lo, theirs) : "–");
    }
    absl::StrAppend(&md, "| ", absl::StrJoin(line, " | "), " |\n");
  }
  return md;
}

}  // namespace

std::string ProtocolCard(const proto::Experiment& e) {
  const std::string early_stop =
      e.eval().has_early_stop()
          ? absl::StrFormat(
                ", stopping at the first round past %d whose clients' mean local-test loss exceeds %g × "
                "its minimum so far",
                e.eval().early_stop().after_round(), e.eval().early_stop().loss_ratio())
          : "";
  // Adam, the default, is not named, so that the cards of every Adam row read as before.
  const std::string optimizer =
      e.optimizer() == fl::proto::FederationSpec::SGD ? absl::StrFormat("SGD (momentum %g), ", e.momentum()) : "";
  return absl::StrFormat(
      "%s model, %s, %s round; dropout at evaluation %s; %s; split %s; %s, partition seed %d; "
      "%d rounds × %d local epochs%s; %slr %g, weight decay %g; client fraction %g",
      e.eval().model(), e.eval().weighting() == "unweighted" ? "unweighted" : e.eval().weighting() + "-weighted",
      e.eval().round(), e.eval().dropout_at_eval() ? "on" : "off", e.model(),
      // A reference partition brings its clients' own splits; the split rule is not used.
      absl::StartsWith(e.partitioner(), "reference:") ? "the partition's own" : e.split(), e.partitioner(),
      e.partition_seed(), e.rounds(), e.local_epochs(), early_stop, optimizer, e.lr(), e.weight_decay(),
      e.client_fraction());
}

std::string MethodParamsText(const proto::Experiment& e) {
  std::vector<std::string> params;
  const google::protobuf::Reflection* r = e.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(e, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    if (f->message_type() == nullptr || f->name() == "eval") continue;
    std::string text;
    google::protobuf::TextFormat::Printer printer;
    printer.SetSingleLineMode(true);
    printer.PrintToString(r->GetMessage(e, f), &text);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    params.push_back(absl::StrCat(f->name(), " { ", text, text.empty() ? "" : " ", "}"));
  }
  return absl::StrJoin(params, " ");
}

namespace {

// The protocol shared by most cells, then each row's own: its method parameters, and its cards
// where they differ from the shared one (per column when only some columns differ).
std::string ProtocolSection(const proto::Table& t,
                            const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::map<std::string, int> count;
  for (const auto& [key, r] : cells) {
    if (!r.protocol.empty()) ++count[r.protocol];
  }
  if (count.empty()) return "";
  const std::string shared = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
                               return a.second < b.second;
                             })->first;
  std::string md = absl::StrCat("\n**Protocol** (every cell unless listed below; dataset and clients are the column's): ",
                                shared, ".\n");
  std::string rows;
  for (const proto::Row& row : t.rows()) {
    std::map<std::string, std::vector<std::string>> by_card;  // card -> columns, where not `shared`
    // params -> columns, in column order of first use (a figure may set them per cell).
    std::vector<std::pair<std::string, std::vector<std::string>>> by_params;
    for (const proto::Column& c : t.columns()) {
      const CellResult& r = Lookup(cells, row.key(), c.key());
      if (!r.protocol.empty() && r.protocol != shared) by_card[r.protocol].push_back(Label(c));
      if (r.params.empty()) continue;
      auto it = std::find_if(by_params.begin(), by_params.end(), [&](const auto& p) { return p.first == r.params; });
      if (it == by_params.end()) it = by_params.insert(by_params.end(), {r.params, {}});
      it->second.push_back(Label(c));
    }
    if (by_card.empty() && by_params.empty()) continue;
    absl::StrAppend(&rows, "- ", Label(row), ":",
                    by_params.size() == 1 ? absl::StrCat(" `", by_params[0].first, "`") : "", "\n");
    if (by_params.size() > 1) {
      for (const auto& [params, columns] : by_params) {
        absl::StrAppend(&rows, "  - ", absl::StrJoin(columns, ", "), ": `", params, "`\n");
      }
    }
    // Only the parts of a card that differ from the shared one.
    const std::vector<std::string> shared_parts = absl::StrSplit(shared, "; ");
    for (const auto& [card, columns] : by_card) {
      std::vector<std::string> differ;
      for (absl::string_view part : absl::StrSplit(card, "; ")) {
        if (std::find(shared_parts.begin(), shared_parts.end(), part) == shared_parts.end()) differ.emplace_back(part);
      }
      absl::StrAppend(&rows, "  - ", absl::StrJoin(columns, ", "), ": ", absl::StrJoin(differ, "; "), "\n");
    }
  }
  if (!rows.empty()) absl::StrAppend(&md, "\n", rows);
  return md;
}

}  // namespace

// The derived "Avg." columns: ours is the mean of the cell means, once every cell it needs is filled.
std::string AveragesSection(const proto::Table& t,
                            const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  if (t.averages().empty()) return "";
  std::string md = "\n**Averages** (the mean of the cells' means; ours / the paper's printed value; \"–\": a cell "
                   "it needs is not filled):\n\n| method |";
  for (const proto::Average& a : t.averages()) absl::StrAppend(&md, " ", a.label().empty() ? a.key() : a.label(), " |");
  absl::StrAppend(&md, "\n|---|");
  for (int i = 0; i < t.averages_size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  for (const proto::Row& r : t.rows()) {
    absl::StrAppend(&md, "| ", Label(r), " |");
    for (const proto::Average& a : t.averages()) {
      double sum = 0, mean = 0;
      bool complete = !a.of().empty();
      for (const std::string& col : a.of()) {
        if (!OurMean(cells, r.key(), col, &mean)) complete = false;
        sum += mean;
      }
      auto printed = a.paper().find(r.key());
      absl::StrAppend(&md, " ", complete ? absl::StrFormat("**%.1f**", sum / a.of_size()) : "–", " / ",
                      printed == a.paper().end() ? "–" : absl::StrFormat("%.2f", printed->second), " |");
    }
    absl::StrAppend(&md, "\n");
  }
  return md;
}

namespace {

// Where runs stopped early (eval.early_stop): per filled cell whose protocol stops early, the
// rounds its seeds ran. Nothing for tables without early stopping.
std::string RoundsRunSection(const proto::Table& t,
                             const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::vector<std::string> parts;
  for (const proto::Row& row : t.rows()) {
    for (const proto::Column& c : t.columns()) {
      auto it = cells.find({row.key(), c.key()});
      if (it == cells.end() || it->second.state != CellResult::State::kDone || it->second.rounds_run.empty() ||
          !absl::StrContains(it->second.protocol, "stopping at the first round")) {
        continue;
      }
      const auto [lo, hi] = std::minmax_element(it->second.rounds_run.begin(), it->second.rounds_run.end());
      parts.push_back(absl::StrCat(Label(row), ", ", Label(c), ": ",
                                   *lo == *hi ? absl::StrCat(*lo) : absl::StrCat(*lo, "–", *hi)));
    }
  }
  if (parts.empty()) return "";
  return absl::StrCat("\n**Rounds run** (early stop; min–max over the seeds): ", absl::StrJoin(parts, "; "), ".\n");
}

}  // namespace

std::string MarkdownReport(const proto::Table& t,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                           const Provenance& p, const std::string& svg_name,
                           const std::string& fidelity_svg_name, const PartitionSpread& spread) {
  const bool some_seeds_recorded = std::any_of(cells.begin(), cells.end(), [](const auto& c) {
    return c.second.state == CellResult::State::kNotRun && c.second.seeds_recorded > 0;
  });
  std::string md = absl::StrCat("# ", t.title(), "\n\n", t.paper(), " — ", t.metric(),
                                ". Each cell: **ours** mean ± std over seeds / the paper's mean ± std. \"stale\": recorded with an older "
                                "method version; \"not run\": no record yet; ",
                                some_seeds_recorded ? "\"k of n seeds\": k of its n seeds recorded, the value waits for the rest; " : "",
                                "\"no data\": the dataset is not on this machine.\n\n");
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(Label(c));
  absl::StrAppend(&md, "| ", absl::StrJoin(header, " | "), " |\n|", std::string(""), "");
  for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  std::map<std::pair<std::string, std::string>, proto::PublishedValue> paper;
  for (const proto::Cell& c : t.cells()) paper[{c.row(), c.column()}] = c.paper();
  for (const proto::Row& r : t.rows()) {
    std::vector<std::string> line = {Label(r)};
    for (const proto::Column& c : t.columns()) {
      auto it = paper.find({r.key(), c.key()});
      line.push_back(it == paper.end() ? "–"
                                       : FormatCell(Lookup(cells, r.key(), c.key()), it->second,
                                                    c.has_value() ? c.value() : t.value(), AccuracyDecimals(t)));
    }
    absl::StrAppend(&md, "| ", absl::StrJoin(line, " | "), " |\n");
  }
  absl::StrAppend(&md, AgreementSection(t, cells));
  absl::StrAppend(&md, AveragesSection(t, cells));
  absl::StrAppend(&md, GainSection(t, cells, paper, ""));
  if (!t.gain_plugin_suffix().empty()) absl::StrAppend(&md, GainSection(t, cells, paper, t.gain_plugin_suffix()));
  absl::StrAppend(&md, ClaimsSection(t, cells));
  absl::StrAppend(&md, SpreadSection(t, cells, paper, spread));
  absl::StrAppend(&md, ProtocolSection(t, cells));
  absl::StrAppend(&md, RoundsRunSection(t, cells));
  // The transcription's working notes stay in the table's textproto: what ran is in the cards.
  if (!t.notes().empty()) {
    absl::StrAppend(&md, "\nNotes on the transcription and the protocol choices: the table's textproto (`notes`).\n");
  }
  if (!fidelity_svg_name.empty()) {
    absl::StrAppend(&md, "\n![ours against the paper, per filled cell](", fidelity_svg_name, ")\n");
  }
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
                        : r.state == CellResult::State::kStale          ? "stale"
                                                                        : "not_printed";
    std::string mean, std;
    if (r.state == CellResult::State::kDone) {
      auto [m, s] = MeanStd(r.values);
      mean = absl::StrFormat("%.3f", m);
      std = absl::StrFormat("%.3f", s);
    }
    absl::StrAppend(&csv, c.row(), ",", c.column(), ",", state, ",", mean, ",", std, ",",
                    r.values.size(), ",", c.paper().present() ? absl::StrFormat("%.6g", c.paper().mean()) : "",
                    ",", c.paper().present() ? absl::StrFormat("%.6g", c.paper().std()) : "", "\n");
  }
  return csv;
}

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
