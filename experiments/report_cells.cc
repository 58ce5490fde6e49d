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

}  // namespace fgl::experiments
