#include "experiments/report_cells.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fgl::experiments {

std::pair<double, double> MeanStd(const std::vector<double>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return {mean, v.size() > 1 ? std::sqrt(var / (v.size() - 1)) : 0.0};
}

const CellResult& Lookup(const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                         const std::string& row, const std::string& col) {
  static const CellResult* empty = new CellResult;
  auto it = cells.find({row, col});
  return it == cells.end() ? *empty : it->second;
}

std::string RowLabel(const proto::Table& t, const std::string& key) {
  for (const proto::Row& r : t.rows()) {
    if (r.key() == key) return Label(r);
  }
  return key;
}

bool OurMean(const std::map<std::pair<std::string, std::string>, CellResult>& cells, const std::string& row,
             const std::string& col, double* mean) {
  const CellResult& r = Lookup(cells, row, col);
  if (r.state != CellResult::State::kDone || r.values.empty()) return false;
  *mean = MeanStd(r.values).first;
  return true;
}

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

namespace {

// Communication is deterministic and printed as the paper prints it: 2 decimals, or 3 significant
// digits in e-notation from 10^4 on.
std::string Amount(double v, bool sign) {
  if (std::abs(v) < 1e4) return absl::StrFormat(sign ? "%+.2f" : "%.2f", v);
  return absl::StrFormat(sign ? "%+.3e" : "%.3e", v);
}

}  // namespace

bool WithinAgreement(const proto::Table& t, const proto::PublishedValue& paper, const std::vector<double>& ours) {
  if (ours.empty()) return false;
  const auto [mean, std] = MeanStd(ours);
  double band;
  if (IsAccuracy(t.value())) {
    const double paper_runs = t.paper_runs() > 0 ? t.paper_runs() : 3;
    const double standard_error = std::sqrt(std * std / ours.size() + paper.std() * paper.std() / paper_runs);
    band = std::max((t.fraction() ? 0.01 : 1.0) * 2, 2 * standard_error);
  } else {
    band = std::max(paper.std(), t.agreement_min_points());
  }
  return std::abs(mean - paper.mean()) <= band + 1e-9;
}

bool AgreementApplies(const proto::Table& t) { return IsAccuracy(t.value()) || t.agreement_min_points() > 0; }

std::string AgreementRuleText(const proto::Table& t) {
  if (IsAccuracy(t.value())) return "|ours − paper| ≤ max(2 points, 2 SE of the difference)";
  return absl::StrFormat("within the paper's ± or %g", t.agreement_min_points());
}

std::string PaperValueText(const proto::PublishedValue& paper, proto::Table::Value value, int decimals) {
  if (!paper.present()) return "–";
  switch (value) {
    case proto::Table::UPLOADED_MIB:
      return Amount(paper.mean(), false);
    case proto::Table::UPLOADED_TENSOR_MIB:
    case proto::Table::TRAINING_MINUTES:
      return absl::StrFormat("%g", paper.mean());
    default:
      break;
  }
  if (paper.std() == 0) return absl::StrFormat("%.*f", decimals, paper.mean());  // no ± printed
  return absl::StrFormat("%.*f ± %.*f", decimals, paper.mean(), decimals, paper.std());
}

std::string FormatCell(const CellResult& r, const proto::PublishedValue& paper, proto::Table::Value value,
                       int decimals, bool outside_agreement) {
  switch (r.state) {
    case CellResult::State::kNotImplemented:
      return "not implemented";
    case CellResult::State::kDataNotPresent:
      return "no data";
    case CellResult::State::kFailed:
      return "RUN FAILED";
    case CellResult::State::kNotPrinted:
      return "–";
    case CellResult::State::kStale:
      return "stale";
    case CellResult::State::kNotRun:
      if (r.seeds_recorded > 0) return absl::StrCat(r.seeds_recorded, " of ", r.seeds_wanted, " seeds");
      return "not run";
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
  const double d = mean - paper.mean();
  std::string ours, difference;
  switch (value) {
    case proto::Table::UPLOADED_MIB:
      ours = absl::StrCat(Amount(mean, false), seeds_differ());
      difference = Amount(d, true);
      break;
    case proto::Table::UPLOADED_TENSOR_MIB:  // FedEgo prints whole MiB: ours to one decimal beside it
      ours = absl::StrCat(absl::StrFormat("%.1f", mean), seeds_differ());
      difference = absl::StrFormat("%+.1f", d);
      break;
    case proto::Table::TRAINING_MINUTES:
      ours = absl::StrFormat("%.1f ± %.1f", mean, std);
      difference = absl::StrFormat("%+.1f", d);
      break;
    case proto::Table::CLIENT_REPORT:
      ours = absl::StrFormat("%.4f ± %.4f", mean, std);
      difference = absl::StrFormat("%+.4f", d);
      break;
    default:
      ours = absl::StrFormat("%.*f ± %.*f", decimals, mean, decimals, std);
      difference = absl::StrFormat("%+.*f", decimals, d);
      break;
  }
  std::string out = ours;
  if (paper.present()) absl::StrAppend(&out, " (", difference, ")", outside_agreement ? "†" : "");
  if (value == proto::Table::UPLOADED_MIB) absl::StrAppend(&out, ", up+down ", Amount(MeanStd(r.traffic_mib).first, false));
  return out;
}

}  // namespace fgl::experiments
