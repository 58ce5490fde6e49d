#include "experiments/run_scheduling.h"

namespace fgl::experiments {

std::optional<size_t> NextRunThatFits(const std::vector<int64_t>& waiting_peaks, int running,
                                      int64_t running_peaks, int64_t limit, int64_t available) {
  if (waiting_peaks.empty()) return std::nullopt;
  if (running == 0) return 0;
  for (size_t i = 0; i < waiting_peaks.size(); ++i) {
    const int64_t need = waiting_peaks[i];
    if (running_peaks + need <= limit && (available == 0 || need <= available)) return i;
  }
  return std::nullopt;
}

bool FinishesInTime(std::optional<double> expected_s, double seconds_left) {
  return expected_s.has_value() && *expected_s > 0 && *expected_s <= seconds_left;
}

}  // namespace fgl::experiments
