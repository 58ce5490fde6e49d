#include "fl/phase_profile.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace fgl::fl {
namespace {

std::atomic<bool> enabled{false};
// This thread's open scopes, innermost last.
thread_local std::vector<const std::string*> open_phases;

struct Profile {
  std::mutex mu;
  std::map<std::string, PhaseTotal> phases;  // by name
  std::map<std::string, int64_t> first_seen;  // name -> order of first entry
};

Profile& TheProfile() {
  static Profile* profile = new Profile();  // never destroyed: scopes may end during exit
  return *profile;
}

}  // namespace

void EnablePhaseProfile(bool on) { enabled.store(on, std::memory_order_relaxed); }
bool PhaseProfileEnabled() { return enabled.load(std::memory_order_relaxed); }

void AddPhaseSeconds(absl::string_view name, double seconds) {
  Profile& p = TheProfile();
  std::lock_guard<std::mutex> lock(p.mu);
  auto [it, fresh] = p.phases.try_emplace(std::string(name));
  if (fresh) {
    it->second.name = std::string(name);
    p.first_seen.emplace(it->first, static_cast<int64_t>(p.first_seen.size()));
  }
  it->second.seconds += seconds;
  ++it->second.calls;
}

ScopedPhase::ScopedPhase(absl::string_view name) : on_(PhaseProfileEnabled()) {
  if (!on_) return;
  path_ = absl::StrContains(name, '/') || open_phases.empty() ? std::string(name)
                                                                : absl::StrCat(*open_phases.back(), "/", name);
  open_phases.push_back(&path_);
  start_ = std::chrono::steady_clock::now();
}

ScopedPhase::~ScopedPhase() {
  if (!on_) return;
  AddPhaseSeconds(path_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  open_phases.pop_back();
}

std::vector<PhaseTotal> PhaseTotals() {
  Profile& p = TheProfile();
  std::lock_guard<std::mutex> lock(p.mu);
  // A phase sorts by the first-entry order of each of its path's prefixes, so that children
  // follow their parent even when a child was entered (and ended) first. A prefix never entered
  // itself sorts where its first descendant does.
  auto key = [&](const std::string& name) {
    std::vector<int64_t> k;
    std::string prefix;
    for (absl::string_view part : absl::StrSplit(name, '/')) {
      prefix = prefix.empty() ? std::string(part) : absl::StrCat(prefix, "/", part);
      auto it = p.first_seen.find(prefix);
      int64_t order = it != p.first_seen.end() ? it->second : INT64_MAX;
      if (it == p.first_seen.end()) {
        for (const auto& [other, o] : p.first_seen) {
          if (other.size() > prefix.size() && other.compare(0, prefix.size(), prefix) == 0 &&
              other[prefix.size()] == '/') {
            order = std::min(order, o);
          }
        }
      }
      k.push_back(order);
    }
    return k;
  };
  std::vector<std::pair<std::vector<int64_t>, PhaseTotal>> sorted;
  for (const auto& [name, total] : p.phases) sorted.emplace_back(key(name), total);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PhaseTotal> out;
  for (auto& [k, total] : sorted) out.push_back(std::move(total));
  return out;
}

void ResetPhaseProfile() {
  Profile& p = TheProfile();
  std::lock_guard<std::mutex> lock(p.mu);
  p.phases.clear();
  p.first_seen.clear();
}

std::string PhaseTable(double wall_s) {
  std::string out = "| phase | seconds | calls | share of wall |\n|---|---:|---:|---:|\n";
  for (const PhaseTotal& t : PhaseTotals()) {
    absl::StrAppendFormat(&out, "| %s | %.3f | %d | %s |\n", absl::StrJoin(absl::StrSplit(t.name, '/'), " / "), t.seconds, t.calls,
                          wall_s > 0 ? absl::StrFormat("%.1f%%", 100 * t.seconds / wall_s) : "");
  }
  return out;
}

}  // namespace fgl::fl
