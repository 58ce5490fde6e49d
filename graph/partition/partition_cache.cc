#include "graph/partition/partition_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "graph/random.h"

namespace fgl::graph {
namespace {

constexpr char kMagic[8] = {'F', 'G', 'L', 'P', 'A', 'R', 'T', '\0'};
constexpr uint32_t kFormatVersion = 1;

void PutU64(std::string& out, uint64_t x) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool U64(uint64_t* x) {
    if (bytes_.size() - pos_ < 8) return false;
    *x = 0;
    for (int i = 0; i < 8; ++i)
      *x |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return true;
  }
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t pos() const { return pos_; }

 private:
  const std::string& bytes_;
  size_t pos_ = 0;
};

void PutList(std::string& out, const std::vector<int64_t>& v) {
  PutU64(out, v.size());
  for (int64_t x : v) PutU64(out, static_cast<uint64_t>(x));
}

}  // namespace

uint64_t DatasetContentHash(const Dataset& d) {
  const CsrGraph& g = d.graph;
  uint64_t h = Fnv1a64(g.row_ptr_data(), sizeof(int64_t) * (g.num_nodes() + 1));
  h = Fnv1a64(g.col_data(), sizeof(int64_t) * g.num_entries(), h);
  torch::Tensor y = d.labels.contiguous();
  h = Fnv1a64(y.data_ptr<int64_t>(), sizeof(int64_t) * y.numel(), h);
  return Fnv1a64(&d.num_classes, sizeof(d.num_classes), h);
}

uint64_t PartitionCacheKey(const Dataset& dataset, const Partitioner& partitioner,
                           int num_clients, uint64_t seed) {
  const std::string text = absl::StrCat("v", kFormatVersion, "|", DatasetContentHash(dataset), "|",
                                        partitioner.Fingerprint(), "|", num_clients, "|", seed);
  return Fnv1a64(text.data(), text.size());
}

std::string PartitionCacheFileName(uint64_t key) {
  return absl::StrFormat("%016x.fglpart", key);
}

std::string EncodePartition(const Partition& p, uint64_t key) {
  std::string body;
  PutU64(body, p.clients.size());
  for (const auto& c : p.clients) PutList(body, c);
  PutList(body, p.server_nodes);
  PutU64(body, p.server_keeps_topology ? 1 : 0);
  std::string out(kMagic, sizeof(kMagic));
  PutU64(out, kFormatVersion);
  PutU64(out, key);
  PutU64(out, Fnv1a64(body.data(), body.size()));
  return out + body;
}

absl::StatusOr<Partition> DecodePartition(const std::string& bytes, uint64_t expected_key,
                                          int64_t num_nodes, const std::string& path) {
  auto corrupt = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt partition cache file: ", why));
  };
  if (bytes.size() < sizeof(kMagic) + 24 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return corrupt("bad magic");
  const std::string rest = bytes.substr(sizeof(kMagic));
  Reader r(rest);
  uint64_t version = 0, key = 0, checksum = 0;
  r.U64(&version);
  r.U64(&key);
  r.U64(&checksum);
  if (version != kFormatVersion) return corrupt(absl::StrCat("format version ", version));
  if (key != expected_key) return corrupt(absl::StrFormat("key %016x, expected %016x", key, expected_key));
  if (Fnv1a64(rest.data() + r.pos(), r.remaining()) != checksum) return corrupt("checksum mismatch");
  Partition p;
  uint64_t k = 0;
  if (!r.U64(&k) || k > r.remaining() / 8) return corrupt("client count");
  auto read_list = [&](std::vector<int64_t>& out) -> bool {
    uint64_t len = 0;
    if (!r.U64(&len) || len > r.remaining() / 8) return false;
    out.resize(len);
    for (uint64_t i = 0; i < len; ++i) {
      uint64_t x = 0;
      r.U64(&x);
      out[i] = static_cast<int64_t>(x);
    }
    return true;
  };
  p.clients.resize(k);
  for (auto& c : p.clients)
    if (!read_list(c)) return corrupt("client list");
  if (!read_list(p.server_nodes)) return corrupt("server list");
  uint64_t topo = 0;
  if (!r.U64(&topo) || topo > 1 || r.remaining() != 0) return corrupt("trailer");
  p.server_keeps_topology = topo == 1;
  if (auto s = ValidatePartition(p, num_nodes, /*disjoint=*/false); !s.ok()) {
    return corrupt(std::string(s.message()));
  }
  return p;
}

std::string DefaultPartitionCacheDir() {
  if (const char* d = std::getenv("FGL_CACHE_DIR"); d && *d) return absl::StrCat(d, "/partitions");
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return absl::StrCat(d, "/fgl/partitions");
  if (const char* d = std::getenv("HOME"); d && *d) return absl::StrCat(d, "/.cache/fgl/partitions");
  return "";
}

absl::StatusOr<Partition> CachedPartition(const Partitioner& partitioner, const Dataset& dataset,
                                          int num_clients, uint64_t seed,
                                          const std::string& cache_dir, bool* cache_hit) {
  if (cache_hit) *cache_hit = false;
  if (cache_dir.empty() || !partitioner.Cacheable()) {
    return partitioner.Run(dataset, num_clients, seed);
  }
  const uint64_t key = PartitionCacheKey(dataset, partitioner, num_clients, seed);
  const std::string path = absl::StrCat(cache_dir, "/", PartitionCacheFileName(key));
  if (io::FileExists(path)) {
    auto bytes = io::ReadFileBytes(path);
    if (bytes.ok()) {
      auto p = DecodePartition(*bytes, key, dataset.num_nodes(), path);
      if (p.ok()) {
        if (cache_hit) *cache_hit = true;
        return p;
      }
      LOG(WARNING) << p.status() << "; recomputing";
    } else {
      LOG(WARNING) << bytes.status() << "; recomputing";
    }
  }
  auto p = partitioner.Run(dataset, num_clients, seed);
  if (!p.ok()) return p;
  // The file format holds no masks: a partition with its own splits is never written.
  if (!p->client_splits.empty()) return p;
  if (auto s = io::MakeDirs(cache_dir); !s.ok()) {
    LOG(WARNING) << "partition cache disabled: " << s;
    return p;
  }
  // Write to a temporary name and rename, so concurrent runs never read half a file.
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const std::string bytes = EncodePartition(*p, key);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      LOG(WARNING) << "cannot write partition cache " << tmp;
      return p;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    LOG(WARNING) << "cannot rename " << tmp << " to " << path << ": " << std::strerror(errno);
    std::remove(tmp.c_str());
  }
  return p;
}

}  // namespace fgl::graph
