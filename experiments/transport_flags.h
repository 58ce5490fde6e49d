// Range checks of the numeric flags of //experiments:serve and //experiments:join, made before
// anything starts. A value no run can mean (NaN, infinite, zero or negative, a wait beyond any
// real one, more clients than the run has) is an InvalidArgument naming the flag, instead of a
// server that gives up at once (a deadline past the clock's range) or waits for clients that
// cannot come.
#ifndef FGL_EXPERIMENTS_TRANSPORT_FLAGS_H_
#define FGL_EXPERIMENTS_TRANSPORT_FLAGS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace fgl::experiments {

// The longest wait a flag may ask for: 30 days. Far beyond any round or join, and far inside what
// a deadline on the steady clock can hold.
inline constexpr double kMaxWaitSeconds = 30 * 24 * 3600.0;

// --FLAG=seconds: finite and in (0, kMaxWaitSeconds].
absl::Status CheckSeconds(absl::string_view flag, double seconds);

// --FLAG=count of clients where 0 means "all" (or the default): in [0, clients].
absl::Status CheckClientCount(absl::string_view flag, int count, int clients);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_TRANSPORT_FLAGS_H_
