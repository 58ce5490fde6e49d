// What a table's claim compares: one Comparison per pair of cells (or cell and bound) it reads,
// with the seed-paired differences its verdict is judged on (claims.h).
#ifndef FGL_EXPERIMENTS_CLAIM_COMPARISONS_H_
#define FGL_EXPERIMENTS_CLAIM_COMPARISONS_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

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

// The comparisons `claim` makes on the filled cells of `cells` (none for a cell not filled).
std::vector<Comparison> Comparisons(const proto::Table& t, const proto::Claim& claim,
                                    const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// `cells` as they will be once every cell awaiting runs is filled (with placeholder values).
std::map<std::pair<std::string, std::string>, CellResult> Completed(
    const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// How many cells a claim would compare on the `complete` cells that are not filled now: a
// verdict on the filled ones alone is only "so far".
int CellsAwaitingRuns(const proto::Table& t, const proto::Claim& claim,
                      const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                      const std::map<std::pair<std::string, std::string>, CellResult>& complete);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_CLAIM_COMPARISONS_H_
