// The run a server or client process takes part in, from the same experiment spec the simulator
// runs (experiments/proto/experiment.proto): both sides must resolve it identically.
#ifndef FGL_EXPERIMENTS_SPEC_OPTIONS_H_
#define FGL_EXPERIMENTS_SPEC_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "fl/federation.h"

namespace fgl::experiments {

// Loads `spec_path`, applies ';'-separated `sets` ("rounds=5;clients=3"), resolves it and picks
// training seed `seed` (0: the spec's first seed). Unimplemented methods are an error.
absl::StatusOr<fl::FederationOptions> OptionsFromSpec(const std::string& spec_path, const std::string& sets,
                                                  uint64_t seed);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_SPEC_OPTIONS_H_
