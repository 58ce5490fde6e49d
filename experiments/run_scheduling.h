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

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_RUN_SCHEDULING_H_
