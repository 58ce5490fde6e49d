// Parses short option strings such as "louvain:resolution=1,delta=20" or "gcn:layers=2".
// Unknown keys and malformed values are errors that name the key and the whole string.
#ifndef FGL_GRAPH_OPTION_STRING_H_
#define FGL_GRAPH_OPTION_STRING_H_

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace fgl::graph {

class OptionString {
 public:
  // "name" or "name:key=value,key=value". Keys must be distinct.
  static absl::StatusOr<OptionString> Parse(const std::string& text);

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }

  // Each getter returns `fallback` when the key is absent and marks the key as known.
  absl::StatusOr<double> Double(const std::string& key, double fallback);
  absl::StatusOr<int64_t> Int(const std::string& key, int64_t fallback);
  absl::StatusOr<bool> Bool(const std::string& key, bool fallback);  // true/false/1/0
  std::string String(const std::string& key, const std::string& fallback);

  // InvalidArgument if some key was never asked for (a misspelt option must not be ignored).
  absl::Status CheckAllUsed() const;

 private:
  std::string text_, name_;
  std::map<std::string, std::string> values_;
  std::set<std::string> used_;
};

}  // namespace fgl::graph

#endif  // FGL_GRAPH_OPTION_STRING_H_
