// Strict field parsing for the text dataset formats (geom-gcn, OGB CSV): a field is a whole
// token or an error that names the file and line.
#ifndef FGL_GRAPH_IO_TEXT_FIELDS_H_
#define FGL_GRAPH_IO_TEXT_FIELDS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fgl::graph::io {

// The lines of `text`, split at '\n'; a '\r' before it is dropped and a final empty line (after
// the last '\n') is not a line. Views point into `text`. complexity: O(|text|).
std::vector<absl::string_view> SplitLines(absl::string_view text);

// `token` as a base-10 int64 ('-' allowed; no '+', spaces or trailing characters), else
// InvalidArgument "<where>: <what> '<token>' is not an integer". complexity: O(|token|).
absl::StatusOr<int64_t> ParseIntField(absl::string_view token, absl::string_view where,
                                      absl::string_view what);

// `token` as a finite float (decimal or exponent form), else InvalidArgument like above.
absl::StatusOr<float> ParseFloatField(absl::string_view token, absl::string_view where,
                                      absl::string_view what);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_TEXT_FIELDS_H_
