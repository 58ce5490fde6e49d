// Test-only writers for small `.npy` and `.npz` files, so reader tests can generate their
// inputs (including deliberately inconsistent ones) instead of checking in binaries.
#ifndef FGL_GRAPH_IO_NPZ_WRITER_H_
#define FGL_GRAPH_IO_NPZ_WRITER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/io/npy.h"

namespace fgl::graph::io::testing {

// `.npy` bytes whose header holds `dict` verbatim (padded with spaces and a newline to a
// multiple of 64, as numpy does), followed by `data` verbatim. complexity: O(|data|).
std::string NpyBytesWithDict(absl::string_view dict, absl::string_view data, int major_version = 1);

// `.npy` bytes for `descr` and `shape`, followed by `data` verbatim (its size is not checked,
// so tests can write truncated arrays). complexity: O(|data|).
std::string NpyBytes(absl::string_view descr, const std::vector<int64_t>& shape,
                     absl::string_view data, bool fortran_order = false, int major_version = 1);

// `.npy` bytes of `values` (C order) with the dtype of `T`; values.size() should be the
// product of `shape`. Works for std::vector<bool>. complexity: O(|values|).
template <typename T>
std::string NpyFromValues(const std::vector<int64_t>& shape, const std::vector<T>& values) {
  std::string data;
  data.reserve(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    const T v = values[i];
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    data.append(raw, sizeof(T));
  }
  return NpyBytes(NpyDescr(NpyDtypeOf<T>()), shape, data);
}

// One archive member: `name` as stored (e.g. "labels.npy") and its bytes.
struct NpzMember {
  std::string name;
  std::string bytes;
};

// A zip archive of `members` in order, each stored or deflated, with a fixed timestamp so the
// same members always give the same bytes. complexity: O(total member bytes).
absl::StatusOr<std::string> NpzBytes(const std::vector<NpzMember>& members, bool deflate);

// Writes `bytes` to `path`, replacing it.
absl::Status WriteBytes(const std::string& path, absl::string_view bytes);

}  // namespace fgl::graph::io::testing

#endif  // FGL_GRAPH_IO_NPZ_WRITER_H_
