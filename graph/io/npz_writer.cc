#include "graph/io/npz_writer.h"

#include <zip.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace fgl::graph::io::testing {
namespace {

absl::Status ZipError(absl::string_view what, zip_error_t* error) {
  return absl::InternalError(absl::StrCat("NpzBytes: ", what, ": ", zip_error_strerror(error)));
}

}  // namespace

std::string NpyBytesWithDict(absl::string_view dict, absl::string_view data, int major_version) {
  const size_t prefix = major_version == 1 ? 10 : 12;
  std::string header(dict);
  // numpy pads so that the data starts on a 64-byte boundary.
  while ((prefix + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major_version));
  out.push_back('\0');
  const uint32_t len = static_cast<uint32_t>(header.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>((len >> 8) & 0xff));
  if (major_version != 1) {
    out.push_back(static_cast<char>((len >> 16) & 0xff));
    out.push_back(static_cast<char>((len >> 24) & 0xff));
  }
  out += header;
  out.append(data.data(), data.size());
  return out;
}

std::string NpyBytes(absl::string_view descr, const std::vector<int64_t>& shape,
                     absl::string_view data, bool fortran_order, int major_version) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&s, i ? ", " : "", shape[i]);
  if (shape.size() == 1) s += ",";
  s += ")";
  return NpyBytesWithDict(absl::StrCat("{'descr': '", descr, "', 'fortran_order': ",
                                       fortran_order ? "True" : "False", ", 'shape': ", s, ", }"),
                          data, major_version);
}

absl::StatusOr<std::string> NpzBytes(const std::vector<NpzMember>& members, bool deflate) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  if (buffer == nullptr) return ZipError("buffer", &error);
  zip_t* za = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  if (za == nullptr) {
    zip_source_free(buffer);
    return ZipError("open", &error);
  }
  for (const NpzMember& m : members) {
    zip_source_t* s = zip_source_buffer(za, m.bytes.data(), m.bytes.size(), 0);
    const zip_int64_t idx = s == nullptr ? -1 : zip_file_add(za, m.name.c_str(), s, 0);
    if (idx < 0) {
      if (s != nullptr) zip_source_free(s);
      const std::string msg = zip_strerror(za);
      zip_discard(za);
      return absl::InternalError(absl::StrCat("NpzBytes: add ", m.name, ": ", msg));
    }
    zip_set_file_compression(za, idx, deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    zip_file_set_mtime(za, idx, 315532800, 0);  // 1980-01-01, the zip epoch (numpy's choice too)
  }
  zip_source_keep(buffer);  // survive zip_close, which writes the archive into it
  if (zip_close(za) != 0) {
    const std::string msg = zip_strerror(za);
    zip_discard(za);
    zip_source_free(buffer);
    return absl::InternalError(absl::StrCat("NpzBytes: close: ", msg));
  }
  std::string out;
  if (zip_source_open(buffer) != 0) {
    zip_source_free(buffer);
    return absl::InternalError("NpzBytes: reopen failed");
  }
  char chunk[1 << 14];
  zip_int64_t r;
  while ((r = zip_source_read(buffer, chunk, sizeof(chunk))) > 0) out.append(chunk, r);
  zip_source_close(buffer);
  zip_source_free(buffer);
  if (r < 0) return absl::InternalError("NpzBytes: read-back failed");
  return out;
}

absl::Status WriteBytes(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace fgl::graph::io::testing
