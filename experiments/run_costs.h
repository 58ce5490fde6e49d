// What a run is expected to cost, by its configuration (CostKey): the recorded runs' mean wall
// time and peak memory, and the committed timings of configurations without records.
#ifndef FGL_EXPERIMENTS_RUN_COSTS_H_
#define FGL_EXPERIMENTS_RUN_COSTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "experiments/proto/experiment.pb.h"
#include "experiments/proto/record.pb.h"

namespace fgl::experiments {

// The configuration key of a run for the budget: "method|dataset|clients|model", the model with
// its dropout rates blanked ("dropout=*", also input_/attn_/prop_dropout): they barely change what
// a run costs (a rate of exactly 0 skips the mask, a little cheaper), and FedMpa's Fig. 3 sweeps
// them. Other model options do matter (nFedGNN's GAT runs cost ten times its GCN runs).
std::string CostKey(const std::string& method, const std::string& dataset, int clients, const std::string& model);
// The CostKey of a resolved experiment.
std::string BudgetKey(const proto::Experiment& e);

// What the recorded runs of one configuration (BudgetKey) cost: mean wall seconds, and the
// largest peak resident set of those that measured it (0 when none did).
struct RecordedCost {
  double wall_s = 0;
  int64_t peak_rss_bytes = 0;
};

// Every configuration's cost from the records in `records`. An early-stopped run's time is scaled
// to all its rounds.
std::map<std::string, RecordedCost> RecordedCosts(const std::string& records);

// For a configuration with neither records nor a timing: the recorded configuration of the same
// method, dataset and model at the nearest client count (the larger on a tie), as its CostKey;
// nullopt when there is none. A rough figure (FedSage+ on CS costs 3,100 s a run with 5 clients
// and 2,100 s with 10), so the budget labels what rests on it.
std::optional<std::string> NeighbourCostKey(const std::map<std::string, RecordedCost>& costs,
                                            const proto::Experiment& e);

// A timing's file name under <records>/timings: the FNV-1a-64 of its configuration key.
std::string TimingFileStem(const std::string& key);

// The committed timings (`records`/timings/*.json) by configuration key. Files that do not parse
// (ReadJson warns; an empty file is skipped silently) or whose name is not their key's hash are
// skipped.
std::map<std::string, proto::BudgetTiming> CommittedTimings(const std::string& records);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_RUN_COSTS_H_
