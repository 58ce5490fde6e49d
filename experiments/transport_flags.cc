#include "experiments/transport_flags.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace fgl::experiments {

absl::Status CheckSeconds(absl::string_view flag, double seconds) {
  if (std::isfinite(seconds) && seconds > 0 && seconds <= kMaxWaitSeconds) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", seconds, ": must be a number of seconds in (0, ",
                                                 static_cast<int64_t>(kMaxWaitSeconds), "] (30 days)"));
}

absl::Status CheckClientCount(absl::string_view flag, int count, int clients) {
  if (count >= 0 && count <= clients) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", count, ": must be in [0, ", clients, "] (the run has ", clients, " clients)"));
}

}  // namespace fgl::experiments
