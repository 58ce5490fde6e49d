#include "graph/io/text_fields.h"

#include <charconv>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/charconv.h"
#include "absl/strings/str_cat.h"

namespace fgl::graph::io {
namespace {

// Tokens are quoted in messages; a runaway one (a whole line) is cut short.
std::string Quote(absl::string_view token) {
  constexpr size_t kMaxShown = 40;
  if (token.size() <= kMaxShown) return absl::StrCat("'", token, "'");
  return absl::StrCat("'", token.substr(0, kMaxShown), "...'");
}

}  // namespace

std::vector<absl::string_view> SplitLines(absl::string_view text) {
  std::vector<absl::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == absl::string_view::npos) end = text.size();
    absl::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

absl::StatusOr<int64_t> ParseIntField(absl::string_view token, absl::string_view where,
                                      absl::string_view what) {
  int64_t value = 0;
  const char* end = token.data() + token.size();
  const auto r = std::from_chars(token.data(), end, value);
  if (token.empty() || r.ec != std::errc() || r.ptr != end) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", what, " ", Quote(token), " is not an integer"));
  }
  return value;
}

absl::StatusOr<float> ParseFloatField(absl::string_view token, absl::string_view where,
                                      absl::string_view what) {
  // Parse as double: absl leaves `value` unspecified on a float range error, and a double
  // tells overflow (refused below) from underflow (rounds to 0, accepted).
  double value = 0;
  const char* end = token.data() + token.size();
  const auto r = absl::from_chars(token.data(), end, value);
  const float narrowed = static_cast<float>(value);
  if (token.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(narrowed)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", what, " ", Quote(token), " is not a finite number"));
  }
  return narrowed;
}

}  // namespace fgl::graph::io
