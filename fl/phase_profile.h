// Where a run's time goes: wall seconds per named phase, process-wide, filled by ScopedPhase where
// a run enters a phase and printed by `//experiments:run --profile`. Off unless enabled; a disabled
// ScopedPhase costs one relaxed atomic load, so the scopes stay in the hot paths.
#ifndef FGL_FL_PHASE_PROFILE_H_
#define FGL_FL_PHASE_PROFILE_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace fgl::fl {

// Phase names are paths: "rounds/client train/message encode" is part of "rounds/client train".
// A phase entered on several threads at once (clients trained in parallel) adds every thread's
// seconds, so a child can exceed its parent's wall time. A name with a '/' is absolute; one
// without is a child of the innermost phase open on this thread (a tensor codec's "message
// encode" lands under whichever client or server phase called it).
void EnablePhaseProfile(bool on = true);
bool PhaseProfileEnabled();

// Adds `seconds` and one call to `name` (a phase timed elsewhere, e.g. before main).
void AddPhaseSeconds(absl::string_view name, double seconds);

// Times its own lifetime into `name` (see above for relative names). Scopes on one thread nest.
class ScopedPhase {
 public:
  explicit ScopedPhase(absl::string_view name);
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  bool on_;
  std::string path_;
  std::chrono::steady_clock::time_point start_;
};

struct PhaseTotal {
  std::string name;
  double seconds = 0;
  int64_t calls = 0;
};
// Every phase so far, each parent before its children, siblings in the order first entered.
std::vector<PhaseTotal> PhaseTotals();
// Forgets every phase (tests).
void ResetPhaseProfile();

// PhaseTotals as a Markdown table: phase ("rounds / client train"), seconds, calls, share of `wall_s`.
std::string PhaseTable(double wall_s);

}  // namespace fgl::fl

#endif  // FGL_FL_PHASE_PROFILE_H_
