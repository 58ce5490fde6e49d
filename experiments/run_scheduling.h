// Which waiting run the table runner starts next, so that runs side by side fit in memory.
#ifndef FGL_EXPERIMENTS_RUN_SCHEDULING_H_
#define FGL_EXPERIMENTS_RUN_SCHEDULING_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace fgl::experiments {

// The index of the first waiting run (its expected peak in bytes, 0 = unknown) that fits beside
// the running ones: their expected peaks plus its own within `limit`, and its own within what the
// machine has `available` for a new run (MemAvailable less the running runs' growth still to come;
// 0 = unknown: not checked). With nothing running the first one starts
// regardless (a run larger than the limit still runs, alone). nullopt: wait for a run to finish.
std::optional<size_t> NextRunThatFits(const std::vector<int64_t>& waiting_peaks, int running,
                                      int64_t running_peaks, int64_t limit, int64_t available);

// Whether a run expected to take `expected_s` seconds (nullopt: its configuration has no record
// or timing) ends within the `seconds_left` before the runner's stop time. A run of unknown length
// is not started: one cut off at a session's end is lost, with its checkpoints, where the machine
// is not kept.
bool FinishesInTime(std::optional<double> expected_s, double seconds_left);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_RUN_SCHEDULING_H_
