// The report's Claims section: each of the paper's claims judged on our cells (paired-seed
// intervals for gains and orderings, our means otherwise) and on the paper's own printed means.
#ifndef FGL_EXPERIMENTS_CLAIMS_H_
#define FGL_EXPERIMENTS_CLAIMS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

// One claim of a table judged on our cells: what the Claims section prints for it, and its outcome
// for counting (the front page's verdict blocks).
struct ClaimJudgement {
  // Gains and orderings: the paired-seed verdict (paired_interval.h). Other claims: whether they
  // hold on our cell means. kNotCheckable: no cell it compares is filled.
  enum class Outcome { kReproduced, kNotReproduced, kInconclusive, kHolds, kDoesNotHold, kNotCheckable };
  std::string text;     // the paper's statement (Claim.text)
  Outcome outcome = Outcome::kNotCheckable;
  bool so_far = false;  // the verdict may change: cells it compares still await runs
  int awaiting = 0;     // how many cells it compares still await runs
  std::string verdict;  // the report's line after the claim: "**not reproduced**: 0 reproduced, ..."
};

// Every claim of `t`, in the table's order, judged on `cells`.
std::vector<ClaimJudgement> JudgeClaims(const proto::Table& t,
                                        const std::map<std::pair<std::string, std::string>, CellResult>& cells);

// "reproduced", "not reproduced", "inconclusive", "holds", "does not hold", "not checkable".
std::string OutcomeName(ClaimJudgement::Outcome outcome);

// One line per claim of `t` with its verdict; "" when the table lists no claims.
std::string ClaimsSection(const proto::Table& t,
                          const std::map<std::pair<std::string, std::string>, CellResult>& cells);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_CLAIMS_H_
