#include "experiments/run_costs.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "experiments/run_records.h"
#include "glog/logging.h"
#include "graph/random.h"

namespace fgl::experiments {

std::string CostKey(const std::string& method, const std::string& dataset, int clients, const std::string& model) {
  static const std::regex kDropout("dropout=[^,;]*");
  return absl::StrCat(method, "|", dataset, "|", clients, "|", std::regex_replace(model, kDropout, "dropout=*"));
}

std::string BudgetKey(const proto::Experiment& e) { return CostKey(e.method(), e.dataset(), e.clients(), e.model()); }

std::map<std::string, RecordedCost> RecordedCosts(const std::string& records) {
  std::map<std::string, std::pair<double, int>> sums;
  std::map<std::string, RecordedCost> costs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(records, ec)) {
    proto::RunRecord record;
    if (entry.path().extension() != ".json" || !ReadJson(entry.path().string(), &record)) continue;
    const fl::proto::RunResult& r = record.result();
    const std::string key = CostKey(r.method(), r.dataset(), r.clients(), r.model());
    auto& [sum, n] = sums[key];
    // An early-stopped run's time scaled to all its rounds: the estimate is for a run that goes
    // the distance (one that stops early costs less).
    sum += r.stopped_round() > 0 ? r.wall_s() * r.rounds() / r.stopped_round() : r.wall_s();
    ++n;
    costs[key].peak_rss_bytes = std::max(costs[key].peak_rss_bytes, record.peak_rss_bytes());
  }
  for (const auto& [key, sn] : sums) costs[key].wall_s = sn.first / sn.second;
  return costs;
}

std::optional<std::string> NeighbourCostKey(const std::map<std::string, RecordedCost>& costs,
                                            const proto::Experiment& e) {
  const std::vector<std::string> want = absl::StrSplit(BudgetKey(e), absl::MaxSplits('|', 3));
  CHECK_EQ(want.size(), 4u) << "a CostKey has four parts";
  std::optional<std::string> best;
  int best_distance = 0, best_clients = 0;
  for (const auto& [key, cost] : costs) {
    const std::vector<std::string> parts = absl::StrSplit(key, absl::MaxSplits('|', 3));
    int clients = 0;
    if (parts.size() != 4 || parts[0] != want[0] || parts[1] != want[1] ||
        parts[3] != want[3] || !absl::SimpleAtoi(parts[2], &clients) || clients == e.clients() ||
        !(cost.wall_s > 0)) {
      continue;
    }
    const int distance = std::abs(clients - e.clients());
    if (!best || distance < best_distance || (distance == best_distance && clients > best_clients)) {
      best = key;
      best_distance = distance;
      best_clients = clients;
    }
  }
  return best;
}

std::string TimingFileStem(const std::string& key) {
  return absl::StrFormat("%016x", graph::Fnv1a64(key.data(), key.size()));
}

std::map<std::string, proto::BudgetTiming> CommittedTimings(const std::string& records) {
  std::map<std::string, proto::BudgetTiming> timings;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(records + "/timings", ec)) {
    proto::BudgetTiming timing;
    if (entry.path().extension() != ".json" || !ReadJson(entry.path().string(), &timing)) continue;
    if (entry.path().stem().string() != TimingFileStem(timing.key()) || timing.rounds_timed() <= 0 ||
        !std::isfinite(timing.load_s()) || !std::isfinite(timing.train_s()) || timing.load_s() < 0 ||
        timing.train_s() < 0) {
      LOG(WARNING) << entry.path().string() << ": not a timing of its configuration (key \"" << timing.key()
                   << "\", rounds_timed " << timing.rounds_timed() << ", load_s " << timing.load_s() << ", train_s "
                   << timing.train_s() << "); ignored";
      continue;
    }
    timings[timing.key()] = timing;
  }
  return timings;
}

}  // namespace fgl::experiments
