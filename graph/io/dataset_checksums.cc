#include "graph/io/dataset_checksums.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

// Every binary that reads datasets takes it.
ABSL_FLAG(bool, verify_data, true,
          "Check dataset files against third_party/dataset_sha256sums.txt when they are loaded (off: your own "
          "files under a listed name).");

namespace fgl::graph::io {
namespace {

// third_party/dataset_sha256sums.txt, as the build embedded it (sha256sum's format).
constexpr char kListedSums[] =
#include "graph/io/dataset_sha256sums.inc"
    ;

thread_local std::optional<std::string> current_root;

const std::map<std::string, std::string, std::less<>>& ListedSums() {
  static const auto* sums = [] {
    auto* m = new std::map<std::string, std::string, std::less<>>();
    std::istringstream lines(kListedSums);
    std::string line;
    while (std::getline(lines, line)) {
      // "<64 hex>  <relative path>"
      if (line.size() > 66 && line.compare(64, 2, "  ") == 0) (*m)[line.substr(66)] = line.substr(0, 64);
    }
    return m;
  }();
  return *sums;
}

// Where verified files are remembered: $FGL_CACHE_HOME, else ~/.cache/fgl, then /verified_files.
std::string CacheDir() {
  if (const char* home = std::getenv("FGL_CACHE_HOME"); home && *home) return absl::StrCat(home, "/verified_files");
  if (const char* home = std::getenv("HOME"); home && *home) return absl::StrCat(home, "/.cache/fgl/verified_files");
  return "";
}

std::string CacheEntry(const std::string& path, int64_t size, int64_t mtime_ns, const std::string& sha) {
  return absl::StrCat(path, "\t", size, "\t", mtime_ns, "\t", sha, "\n");
}

std::string CachePath(const std::string& dir, const std::string& path) {
  return absl::StrCat(dir, "/", Sha256Hex(path).substr(0, 16));
}

bool RememberedAsVerified(const std::string& path, int64_t size, int64_t mtime_ns, const std::string& sha) {
  const std::string dir = CacheDir();
  if (dir.empty()) return false;
  std::ifstream in(CachePath(dir, path), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return in && text.str() == CacheEntry(path, size, mtime_ns, sha);
}

// Best effort: a cache that cannot be written only costs the next load a hash.
void RememberAsVerified(const std::string& path, int64_t size, int64_t mtime_ns, const std::string& sha) {
  const std::string dir = CacheDir();
  if (dir.empty()) return;
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0755);
  }
  const std::string target = CachePath(dir, path);
  const std::string tmp = absl::StrCat(target, ".", ::getpid(), ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << CacheEntry(path, size, mtime_ns, sha);
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

DatasetChecksumScope::DatasetChecksumScope(const std::string& data_root) : previous_(current_root) {
  current_root = std::string(absl::StripSuffix(data_root, "/"));
}

DatasetChecksumScope::~DatasetChecksumScope() { current_root = previous_; }

void SetVerifyDatasetFiles(bool verify) { absl::SetFlag(&FLAGS_verify_data, verify); }

std::optional<std::string_view> ListedSha256(std::string_view relative_path) {
  const auto& sums = ListedSums();
  auto it = sums.find(relative_path);
  if (it == sums.end()) return std::nullopt;
  return std::string_view(it->second);
}

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

absl::Status VerifyDatasetFile(const std::string& path, std::string_view bytes, int64_t size, int64_t mtime_ns) {
  if (!absl::GetFlag(FLAGS_verify_data) || !current_root.has_value() || current_root->empty()) return absl::OkStatus();
  const std::string prefix = *current_root + "/";
  if (path.compare(0, prefix.size(), prefix) != 0) return absl::OkStatus();
  std::string_view relative = std::string_view(path).substr(prefix.size());
  while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
  const std::optional<std::string_view> listed = ListedSha256(relative);
  if (!listed.has_value()) return absl::OkStatus();
  if (RememberedAsVerified(path, size, mtime_ns, std::string(*listed))) return absl::OkStatus();
  const std::string actual = Sha256Hex(bytes);
  if (actual != *listed) {
    return absl::DataLossError(absl::StrCat(
        path, ": damaged or altered dataset file: sha256 ", actual, ", but third_party/dataset_sha256sums.txt lists ",
        std::string(*listed), " (fetch it again with third_party/download_datasets.sh, or pass --verify_data=false for your own "
                 "file under this name)"));
  }
  RememberAsVerified(path, size, mtime_ns, std::string(*listed));
  return absl::OkStatus();
}

}  // namespace fgl::graph::io
