// On-disk cache of partitions, keyed by (dataset content, partitioner fingerprint, clients, seed),
// so that every run and method of an experiment reuses one partition, and a different seed or
// parameter never silently reuses an old one.
#ifndef FGL_GRAPH_PARTITION_PARTITION_CACHE_H_
#define FGL_GRAPH_PARTITION_PARTITION_CACHE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "graph/partition/partitioner.h"

namespace fgl::graph {

// Hash of what partitioners read: the CSR structure, labels and class count (not features).
uint64_t DatasetContentHash(const Dataset& dataset);

// The cache key and file name ("<16 hex digits>.fglpart") for one partition request.
uint64_t PartitionCacheKey(const Dataset& dataset, const Partitioner& partitioner, int num_clients,
                           uint64_t seed);
std::string PartitionCacheFileName(uint64_t key);

// Serialised partition with magic, format version, key and checksum.
std::string EncodePartition(const Partition& partition, uint64_t key);
// Parses and validates bytes from disk (magic, version, key, checksum, node ranges).
absl::StatusOr<Partition> DecodePartition(const std::string& bytes, uint64_t expected_key,
                                          int64_t num_nodes, const std::string& path);

// Returns the cached partition from `cache_dir` or computes, stores and returns it. An empty
// `cache_dir` disables caching, and so does a partitioner that is not Cacheable() (it reads its
// partition from files) or a partition that carries client_splits (not in the file format). A
// corrupt cache file is reported, recomputed and overwritten.
absl::StatusOr<Partition> CachedPartition(const Partitioner& partitioner, const Dataset& dataset,
                                          int num_clients, uint64_t seed,
                                          const std::string& cache_dir, bool* cache_hit = nullptr);

// $FGL_CACHE_DIR/partitions, else $XDG_CACHE_HOME/fgl/partitions, else ~/.cache/fgl/partitions.
std::string DefaultPartitionCacheDir();

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_PARTITION_CACHE_H_
