// NumPy `.npy` arrays and `.npz` archives read from untrusted bytes, without pickle: object
// arrays are refused, so a hostile file can at worst produce an error. Only little-endian
// numeric and boolean dtypes are accepted; every array comes back in C (row-major) order.
#ifndef FGL_GRAPH_IO_NPY_H_
#define FGL_GRAPH_IO_NPY_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace fgl::graph::io {

// The dtypes we accept, named after their `descr` in the header.
enum class NpyDtype {
  kFloat32,  // '<f4'
  kFloat64,  // '<f8'
  kInt8,     // '|i1'
  kInt32,    // '<i4'
  kInt64,    // '<i8'
  kUint8,    // '|u1'
  kUint32,   // '<u4'
  kUint64,   // '<u8'
  kBool,     // '|b1'
};

// Bytes per element.
int64_t NpyItemSize(NpyDtype dtype);
// The header `descr`, e.g. "<f4".
absl::string_view NpyDescr(NpyDtype dtype);

// The dtype whose elements are exactly C++ `T` (float, double, int8_t, int32_t, int64_t,
// uint8_t, uint32_t, uint64_t, bool).
template <typename T>
constexpr NpyDtype NpyDtypeOf();

// A decoded array: little-endian elements in C order, data.size() == numel() * itemsize.
struct NpyArray {
  NpyDtype dtype = NpyDtype::kFloat32;
  std::vector<int64_t> shape;  // () is a scalar with one element
  std::string data;

  int64_t numel() const;
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  // The elements as `T`, which must be the C++ type of `dtype` (CHECKed: a mismatch is a bug).
  template <typename T>
  absl::Span<const T> values() const;
};

// What the header says. `data_offset` is where the elements start.
struct NpyHeader {
  int major_version = 1;
  NpyDtype dtype = NpyDtype::kFloat32;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;
};

// Parses the magic, version (1.0, 2.0 or 3.0), header length and the header dict
// {'descr': ..., 'fortran_order': ..., 'shape': (...)} exactly as numpy writes it.
// InvalidArgument for an unsupported dtype (object '|O', strings, big-endian) or a malformed
// header; DataLoss if `bytes` ends inside the header. `source` prefixes every message.
// complexity: O(header length).
absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view bytes, const std::string& source);

// Parses a whole `.npy` file: header, then exactly numel * itemsize bytes (else DataLoss).
// Fortran-ordered arrays are transposed into C order. complexity: O(bytes).
absl::StatusOr<NpyArray> ParseNpy(std::string bytes, const std::string& source);

// Reads and parses a `.npy` file; a missing file is NotFound naming `dataset` (see file.h).
// complexity: O(file size).
absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path, const std::string& dataset = "");

// Tensor conversions (always a copy). `source` prefixes errors. complexity: O(numel).
// Any numeric or bool dtype -> float32 (float64 rounds).
absl::StatusOr<torch::Tensor> NpyToFloat32Tensor(const NpyArray& array, const std::string& source);
// Integer or bool dtypes -> int64; floats are refused, uint64 values above INT64_MAX too.
absl::StatusOr<torch::Tensor> NpyToInt64Tensor(const NpyArray& array, const std::string& source);
// Bool (any non-zero byte is true, as in numpy) or an integer array holding only 0 and 1.
absl::StatusOr<torch::Tensor> NpyToBoolTensor(const NpyArray& array, const std::string& source);

// Options for reading `.npz` members.
struct NpzOptions {
  // Largest decompressed member accepted; larger is ResourceExhausted. Guards against zip bombs.
  size_t max_member_bytes = size_t{2} << 30;
  // What the archive is called in errors ("not a valid .npz (zip) archive"); torch_pt.cc reads
  // torch.save files with this class too.
  std::string format_name = ".npz";
};

// A `.npz` archive (a zip of `<key>.npy` members, stored or deflated) held in memory.
// Not thread-safe: reading a member moves libzip's state.
class NpzArchive {
 public:
  // Opens the zip in `bytes`; a corrupt or non-zip input is DataLoss naming `source`.
  // complexity: O(number of members) plus libzip's consistency check.
  static absl::StatusOr<NpzArchive> FromBytes(std::string bytes, std::string source,
                                              NpzOptions options = {});
  // Reads `path` with ReadFileBytes (NotFound names the file and `dataset`), then FromBytes.
  // complexity: O(file size).
  static absl::StatusOr<NpzArchive> Open(const std::string& path, const std::string& dataset = "",
                                         NpzOptions options = {});

  NpzArchive(NpzArchive&&) noexcept;
  NpzArchive& operator=(NpzArchive&&) noexcept;
  ~NpzArchive();

  const std::string& source() const { return source_; }
  // Keys in archive order, without ".npy" (members not ending in ".npy" are listed as-is).
  const std::vector<std::string>& keys() const { return keys_; }
  // Whether member `key` (without ".npy") exists. complexity: O(number of members).
  bool Contains(absl::string_view key) const;

  // The raw bytes of member `key` ("adj_data" reads "adj_data.npy"). NotFound if absent,
  // DataLoss on a CRC or inflate error, ResourceExhausted above max_member_bytes.
  // complexity: O(member size).
  absl::StatusOr<std::string> ReadMemberBytes(absl::string_view key);
  // ReadMemberBytes then ParseNpy; errors name "<source>:<key>.npy".
  absl::StatusOr<NpyArray> ReadArray(absl::string_view key);

 private:
  struct State;
  NpzArchive(std::unique_ptr<State> state, std::string source, NpzOptions options,
             std::vector<std::string> keys, std::vector<uint64_t> indices);
  std::unique_ptr<State> state_;  // the zip buffer must not move while libzip reads it
  std::string source_;
  NpzOptions options_;
  std::vector<std::string> keys_;
  std::vector<uint64_t> indices_;  // zip entry index of keys_[i]
};

// ---- implementation details of the templates above ----

template <>
constexpr NpyDtype NpyDtypeOf<float>() {
  return NpyDtype::kFloat32;
}
template <>
constexpr NpyDtype NpyDtypeOf<double>() {
  return NpyDtype::kFloat64;
}
template <>
constexpr NpyDtype NpyDtypeOf<int8_t>() {
  return NpyDtype::kInt8;
}
template <>
constexpr NpyDtype NpyDtypeOf<int32_t>() {
  return NpyDtype::kInt32;
}
template <>
constexpr NpyDtype NpyDtypeOf<int64_t>() {
  return NpyDtype::kInt64;
}
template <>
constexpr NpyDtype NpyDtypeOf<uint8_t>() {
  return NpyDtype::kUint8;
}
template <>
constexpr NpyDtype NpyDtypeOf<uint32_t>() {
  return NpyDtype::kUint32;
}
template <>
constexpr NpyDtype NpyDtypeOf<uint64_t>() {
  return NpyDtype::kUint64;
}
template <>
constexpr NpyDtype NpyDtypeOf<bool>() {
  return NpyDtype::kBool;
}

namespace internal {
void CheckNpyDtype(NpyDtype have, NpyDtype want);  // CHECK-fails on mismatch
}  // namespace internal

template <typename T>
absl::Span<const T> NpyArray::values() const {
  internal::CheckNpyDtype(dtype, NpyDtypeOf<T>());
  // std::string storage is malloc-aligned (or inline and 8-aligned for tiny arrays), which
  // suffices for every element type above.
  return absl::Span<const T>(reinterpret_cast<const T*>(data.data()), data.size() / sizeof(T));
}

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_NPY_H_
