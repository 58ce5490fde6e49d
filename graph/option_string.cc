#include "graph/option_string.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fgl::graph {

absl::StatusOr<OptionString> OptionString::Parse(const std::string& text) {
  OptionString out;
  out.text_ = text;
  const size_t colon = text.find(':');
  out.name_ = std::string(absl::StripAsciiWhitespace(text.substr(0, colon)));
  if (out.name_.empty()) return absl::InvalidArgumentError(absl::StrCat("'", text, "': empty name"));
  if (colon == std::string::npos) return out;
  for (absl::string_view item : absl::StrSplit(text.substr(colon + 1), ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    std::string key(absl::StripAsciiWhitespace(kv.first));
    std::string value(absl::StripAsciiWhitespace(kv.second));
    if (key.empty() || item.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "': expected key=value, got '", item, "'"));
    }
    if (!out.values_.emplace(key, value).second) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "': key '", key, "' given twice"));
    }
  }
  return out;
}

absl::StatusOr<double> OptionString::Double(const std::string& key, double fallback) {
  used_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  double x;
  if (!absl::SimpleAtod(it->second, &x) || !std::isfinite(x)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text_, "': ", key, "=", it->second, " is not a finite number"));
  }
  return x;
}

absl::StatusOr<int64_t> OptionString::Int(const std::string& key, int64_t fallback) {
  used_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  int64_t x;
  if (!absl::SimpleAtoi(it->second, &x)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text_, "': ", key, "=", it->second, " is not an integer"));
  }
  return x;
}

absl::StatusOr<bool> OptionString::Bool(const std::string& key, bool fallback) {
  used_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("'", text_, "': ", key, "=", it->second, " is not true/false"));
}

std::string OptionString::String(const std::string& key, const std::string& fallback) {
  used_.insert(key);
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

absl::Status OptionString::CheckAllUsed() const {
  std::vector<std::string> unknown;
  for (const auto& [k, v] : values_)
    if (!used_.count(k)) unknown.push_back(k);
  if (unknown.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("'", text_, "': unknown option(s) ",
                                                 absl::StrJoin(unknown, ", "), " for '", name_,
                                                 "'"));
}

}  // namespace fgl::graph
