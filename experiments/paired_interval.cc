#include "experiments/paired_interval.h"

#include <algorithm>
#include <cmath>

namespace fgl::experiments {

double StudentT975(int df) {
  static constexpr double kTable[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
                                      2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
                                      2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
                                      2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df < 1) return NAN;
  if (df <= 30) return kTable[df - 1];
  // Cornish-Fisher expansion around the normal quantile (Abramowitz & Stegun 26.7.5).
  const double z = 1.959963984540054, z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, n = df;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n);
}

PairedInterval IntervalOf(const std::vector<double>& d) {
  PairedInterval out;
  out.n = static_cast<int>(d.size());
  if (d.empty()) return out;
  double sum = 0;
  for (double x : d) sum += x;
  out.mean = sum / out.n;
  out.low = out.high = out.mean;
  if (out.n < 2) return out;
  double squares = 0;
  for (double x : d) squares += (x - out.mean) * (x - out.mean);
  const double half = StudentT975(out.n - 1) * std::sqrt(squares / (out.n - 1) / out.n);
  out.low = out.mean - half;
  out.high = out.mean + half;
  out.has_interval = true;
  return out;
}

std::map<uint64_t, double> PairedDifferences(const std::vector<double>& lhs, const std::vector<uint64_t>& lhs_seeds,
                                             const std::vector<double>& rhs, const std::vector<uint64_t>& rhs_seeds) {
  std::map<uint64_t, double> out;
  if (lhs_seeds.size() != lhs.size() || rhs_seeds.size() != rhs.size() || lhs_seeds.empty() || rhs_seeds.empty()) {
    for (size_t i = 0; i < std::min(lhs.size(), rhs.size()); ++i) out[i] = lhs[i] - rhs[i];
    return out;
  }
  std::map<uint64_t, double> rhs_by_seed;
  for (size_t i = 0; i < rhs.size(); ++i) rhs_by_seed.emplace(rhs_seeds[i], rhs[i]);
  for (size_t i = 0; i < lhs.size(); ++i) {
    auto it = rhs_by_seed.find(lhs_seeds[i]);
    if (it != rhs_by_seed.end()) out.emplace(lhs_seeds[i], lhs[i] - it->second);
  }
  return out;
}

Verdict Judge(const PairedInterval& interval, double margin) {
  if (!interval.has_interval) return Verdict::kInconclusive;
  if (interval.high < margin - 1e-9) return Verdict::kNotReproduced;
  if (interval.low > std::min(0.0, margin) + 1e-9) return Verdict::kReproduced;
  return Verdict::kInconclusive;
}

std::string VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kReproduced:
      return "reproduced";
    case Verdict::kNotReproduced:
      return "not reproduced";
    case Verdict::kInconclusive:
      break;
  }
  return "inconclusive";
}

}  // namespace fgl::experiments
