#include "graph/testing/data_root.h"

#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgl::graph::testing {

absl::StatusOr<std::string> DataRootWithout(const std::string& data_dir,
                                            const std::string& dataset_dir,
                                            const std::string& omitted_file,
                                            const std::string& scratch) {
  namespace fs = std::filesystem;
  const fs::path source = fs::path(data_dir) / dataset_dir;
  if (!fs::exists(source / omitted_file)) {
    return absl::NotFoundError(absl::StrCat((source / omitted_file).string(),
                                            ": not present, so there is nothing to leave out"));
  }
  const fs::path target = fs::path(scratch) / dataset_dir;
  std::error_code ec;
  fs::remove_all(target, ec);
  fs::create_directories(target, ec);
  if (ec) return absl::InternalError(absl::StrCat(target.string(), ": ", ec.message()));
  for (const fs::directory_entry& e : fs::directory_iterator(source, ec)) {
    if (e.path().filename() == omitted_file) continue;
    fs::create_symlink(fs::absolute(e.path()), target / e.path().filename(), ec);
    if (ec) return absl::InternalError(absl::StrCat(e.path().string(), ": ", ec.message()));
  }
  if (ec) return absl::InternalError(absl::StrCat(source.string(), ": ", ec.message()));
  return scratch;
}

}  // namespace fgl::graph::testing
