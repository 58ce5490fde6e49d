#include "experiments/claims.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/claim_comparisons.h"
#include "experiments/paired_interval.h"

namespace fgl::experiments {
namespace {

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
                          int awaiting, bool aggregate, ClaimJudgement& judged) {
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
  judged.outcome = verdict == Verdict::kReproduced      ? ClaimJudgement::Outcome::kReproduced
                   : verdict == Verdict::kNotReproduced ? ClaimJudgement::Outcome::kNotReproduced
                                                        : ClaimJudgement::Outcome::kInconclusive;
  judged.so_far = so_far;
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

}  // namespace

std::string OutcomeName(ClaimJudgement::Outcome outcome) {
  switch (outcome) {
    case ClaimJudgement::Outcome::kReproduced:
      return "reproduced";
    case ClaimJudgement::Outcome::kNotReproduced:
      return "not reproduced";
    case ClaimJudgement::Outcome::kInconclusive:
      return "inconclusive";
    case ClaimJudgement::Outcome::kHolds:
      return "holds";
    case ClaimJudgement::Outcome::kDoesNotHold:
      return "does not hold";
    case ClaimJudgement::Outcome::kNotCheckable:
      return "not checkable";
  }
  return "";
}

std::vector<ClaimJudgement> JudgeClaims(const proto::Table& t,
                                        const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::vector<ClaimJudgement> judged;
  if (t.claims().empty()) return judged;
  const auto complete = Completed(cells);
  const auto paper_cells = PaperCells(t);
  for (const proto::Claim& claim : t.claims()) {
    ClaimJudgement j;
    j.text = claim.text();
    const std::vector<Comparison> all = Comparisons(t, claim, cells);
    const int awaiting = CellsAwaitingRuns(t, claim, cells, complete);
    j.awaiting = awaiting;
    // A per-cell claim ("in every column") is refuted by one failing comparison; a mean over
    // columns may still change with the missing ones.
    const bool aggregate = claim.kind() == proto::Claim::MEAN_GAIN_AT_LEAST;
    const Tally tally = Count(all, [](const Comparison& c) { return c.Holds(); });
    const int holds = tally.holds;
    const Comparison* worst = tally.worst;
    std::string verdict;
    if (!all.empty() && all.front().paired) {
      verdict = PairedVerdict(t, all, tally, awaiting, aggregate, j);
      if (awaiting > 0) {
        absl::StrAppend(&verdict, "; ", awaiting, awaiting == 1 ? " cell it compares still awaits" : " cells it compares still await", " runs");
      }
    } else if (all.empty()) {
      j.outcome = ClaimJudgement::Outcome::kNotCheckable;
      verdict = awaiting > 0 ? absl::StrCat("not checkable yet: ", awaiting == 1 ? "the cell it compares awaits"
                                                                                : absl::StrCat("the ", awaiting, " cells it compares await"),
                                            " runs")
                             : "not checkable here (no cells it compares can be filled on this machine)";
    } else {
      const bool all_hold = tally.all_hold(all);
      const bool so_far = awaiting > 0 && (all_hold || aggregate);
      j.outcome = all_hold ? ClaimJudgement::Outcome::kHolds : ClaimJudgement::Outcome::kDoesNotHold;
      j.so_far = so_far;
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
    j.verdict = std::move(verdict);
    judged.push_back(std::move(j));
  }
  return judged;
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
  for (const ClaimJudgement& j : JudgeClaims(t, cells)) absl::StrAppend(&md, "- ", j.text, " — ", j.verdict, "\n");
  return md;
}

}  // namespace fgl::experiments
