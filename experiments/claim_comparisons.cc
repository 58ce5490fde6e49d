#include "experiments/claim_comparisons.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/paired_interval.h"

namespace fgl::experiments {
namespace {

// Half a unit of the last digit the paper prints: two decimals below 10^4, three significant
// digits from 10^4 on (as FormatCell prints communication).
double PrintedPrecision(double value) {
  const double magnitude = std::abs(value);
  if (magnitude < 1e4) return 0.005;
  return 0.5 * std::pow(10.0, std::floor(std::log10(magnitude)) - 2);
}

// A cell that will hold a value once its runs are made (not run, stale, failed, or its row not
// implemented yet), as opposed to one whose data is absent or that the table does not print.
bool AwaitsRuns(CellResult::State s) {
  return s == CellResult::State::kNotRun || s == CellResult::State::kStale || s == CellResult::State::kFailed ||
         s == CellResult::State::kNotImplemented;
}

}  // namespace

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
    case proto::Claim::BEST_IN_REGION: {
      auto in = [](const auto& keys, const std::string& key) {
        return std::find(keys.begin(), keys.end(), key) != keys.end();
      };
      // The region's best cell by our mean (the first in table order on a tie), and every region
      // cell as read: one still awaiting runs may become the best.
      std::pair<std::string, std::string> best;
      double best_mean = 0;
      std::vector<std::pair<std::string, std::string>> region;
      for (const proto::Row& r : t.rows()) {
        if (!in(claim.region_rows(), r.key())) continue;
        for (const proto::Column& c : t.columns()) {
          if (!in(claim.region_columns(), c.key())) continue;
          region.emplace_back(r.key(), c.key());
          double mean;
          if (OurMean(cells, r.key(), c.key(), &mean) && (best.first.empty() || mean > best_mean)) {
            best = {r.key(), c.key()};
            best_mean = mean;
          }
        }
      }
      if (best.first.empty()) break;
      for (const proto::Row& r : t.rows()) {
        for (const proto::Column& c : t.columns()) {
          double mean;
          if ((in(claim.region_rows(), r.key()) && in(claim.region_columns(), c.key())) ||
              !OurMean(cells, r.key(), c.key(), &mean)) {
            continue;
          }
          Comparison cmp{absl::StrCat(best.first, "/", best.second, " (the region's best) vs ", r.key(), "/", c.key()),
                         best_mean, mean, 0, -1, region};
          cmp.reads.emplace_back(r.key(), c.key());
          cmp.differences = differences(best.first, best.second, r.key(), c.key());
          cmp.paired = true;
          out.push_back(std::move(cmp));
        }
      }
      break;
    }
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

}  // namespace fgl::experiments
