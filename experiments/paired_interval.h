// Paired-seed confidence intervals for the claims of a report: the mean difference of two cells
// over the seeds both recorded, with a two-sided 95% Student-t interval, and the three verdicts a
// claimed gain gets from it.
#ifndef FGL_EXPERIMENTS_PAIRED_INTERVAL_H_
#define FGL_EXPERIMENTS_PAIRED_INTERVAL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fgl::experiments {

// The 0.975 quantile of Student's t with `df` >= 1 degrees of freedom (exact to 4 decimals up to
// 30, a Cornish-Fisher expansion beyond, within 1e-4 of the exact value).
double StudentT975(int df);

// Mean of `differences` and its 95% interval; `n` < 2 leaves the interval unknown (low = high =
// mean, `has_interval` false).
struct PairedInterval {
  int n = 0;
  double mean = 0, low = 0, high = 0;
  bool has_interval = false;
};
PairedInterval IntervalOf(const std::vector<double>& differences);

// lhs_i − rhs_i for every seed in both `lhs_seeds` and `rhs_seeds`, keyed by seed. Without seeds
// for every value (e.g. cells built by hand) the values pair by position, keyed 0, 1, ...
std::map<uint64_t, double> PairedDifferences(const std::vector<double>& lhs, const std::vector<uint64_t>& lhs_seeds,
                                      const std::vector<double>& rhs, const std::vector<uint64_t>& rhs_seeds);

// A claimed gain of at least `margin` (lhs − rhs >= margin), judged on the paired interval:
// kReproduced when the interval reaches the margin (high >= margin) and excludes no gain at all
// (low > min(0, margin)); kNotReproduced when it lies below the margin (high < margin);
// kInconclusive otherwise, and without an interval.
enum class Verdict { kReproduced, kNotReproduced, kInconclusive };
Verdict Judge(const PairedInterval& interval, double margin);
std::string VerdictName(Verdict v);  // "reproduced", "not reproduced", "inconclusive"

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_PAIRED_INTERVAL_H_
