// Times one partitioner on one dataset and prints one JSON line per repetition: wall and CPU
// seconds of Partitioner::Run (the dataset load is timed apart), the clients' sizes, the
// fraction of undirected edges cut between clients, and a hash of the partition (FNV-1a over
// every client's nodes in order: equal hashes, equal partitions). No partition cache: every
// repetition runs. The numbers in graph/README.md ("Leiden") come from this tool, one core:
//
//   bazel build //graph/partition:partition_timing
//   taskset -c 1 bazel-bin/graph/partition/partition_timing --clients=100
//       --dataset=csbm:num_nodes=1000000,num_features=1 --partitioner=louvain:algorithm=leiden
//   FGL_DATA_DIR=$PWD/../shared/data bazel run //graph/partition:partition_timing --
//       --dataset=cora --partitioner=louvain --clients=10
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/datasets.h"
#include "graph/partition/louvain_partitioner.h"
#include "graph/partition/partitioner_registry.h"

ABSL_FLAG(std::string, dataset, "csbm:num_nodes=100000,num_features=1",
          "Dataset spec, e.g. cora or csbm:num_nodes=1000000,num_features=1.");
ABSL_FLAG(std::string, data_dir, "", "Dataset root; else $FGL_DATA_DIR, else ./data.");
ABSL_FLAG(std::string, partitioner, "louvain", "Partitioner spec, e.g. louvain:algorithm=leiden.");
ABSL_FLAG(int, clients, 100, "Number of clients.");
ABSL_FLAG(uint64_t, seed, 2024, "Partition seed (and csbm generation seed).");
ABSL_FLAG(int, repeat, 1, "Repetitions of the partitioner on the loaded dataset.");
ABSL_FLAG(bool, phases, false,
          "louvain only: time community detection (CSR to edge list + igraph) and the packing "
          "apart, and report the communities' count and largest size. The partition is the same "
          "as Run's (without class_coverage_fix, which this refuses).");

namespace fgl::graph {
namespace {

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int Main() {
  const std::string spec = absl::GetFlag(FLAGS_dataset);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const int k = absl::GetFlag(FLAGS_clients);
  auto t0 = std::chrono::steady_clock::now();
  auto dataset = LoadDataset(spec, ResolveDataDir(absl::GetFlag(FLAGS_data_dir)), seed);
  if (!dataset.ok()) {
    std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
    return 1;
  }
  const double load_s = Since(t0);
  auto partitioner = MakePartitioner(absl::GetFlag(FLAGS_partitioner));
  if (!partitioner.ok()) {
    std::fprintf(stderr, "%s\n", partitioner.status().ToString().c_str());
    return 1;
  }
  const CsrGraph& g = dataset->graph;
  const int64_t n = g.num_nodes();
  for (int r = 0; r < absl::GetFlag(FLAGS_repeat); ++r) {
    t0 = std::chrono::steady_clock::now();
    const double cpu0 = CpuSeconds();
    absl::StatusOr<Partition> partition;
    std::string phases;
    if (absl::GetFlag(FLAGS_phases)) {
      const auto* louvain = dynamic_cast<const LouvainPartitioner*>(partitioner->get());
      if (louvain == nullptr || louvain->options().class_coverage_fix) {
        std::fprintf(stderr, "--phases needs louvain without class_coverage_fix\n");
        return 1;
      }
      auto communities = louvain->Communities(*dataset, seed);
      if (!communities.ok()) {
        std::fprintf(stderr, "%s\n", communities.status().ToString().c_str());
        return 1;
      }
      const double detect_cpu_s = CpuSeconds() - cpu0;
      partition = PackCommunities(*communities, k, louvain->options().delta,
                                  louvain->options().rebalance);
      const double pack_cpu_s = CpuSeconds() - cpu0 - detect_cpu_s;
      std::vector<int64_t> size(n, 0);
      int64_t count = 0, largest = 0;
      for (int64_t c : *communities) {
        count += size[c]++ == 0;
        largest = std::max(largest, size[c]);
      }
      phases = absl::StrFormat(
          ",\"detect_cpu_s\":%.3f,\"pack_cpu_s\":%.3f,\"communities\":%d,\"largest_community\":%d",
          detect_cpu_s, pack_cpu_s, count, largest);
    } else {
      partition = (*partitioner)->Run(*dataset, k, seed);
    }
    const double cpu_s = CpuSeconds() - cpu0;
    const double wall_s = Since(t0);
    if (!partition.ok()) {
      std::fprintf(stderr, "%s\n", partition.status().ToString().c_str());
      return 1;
    }
    std::vector<int> owner(n, -1);
    int64_t held = 0, min_size = n, max_size = 0;
    for (int c = 0; c < partition->num_clients(); ++c) {
      const int64_t s = static_cast<int64_t>(partition->clients[c].size());
      min_size = std::min(min_size, s);
      max_size = std::max(max_size, s);
      held += s;
      for (int64_t v : partition->clients[c]) owner[v] = c;
    }
    uint64_t hash = 0xcbf29ce484222325ull;
    auto mix = [&](uint64_t x) {
      for (int b = 0; b < 8; ++b) hash = (hash ^ ((x >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    };
    for (const auto& client : partition->clients) {
      mix(client.size());
      for (int64_t v : client) mix(static_cast<uint64_t>(v));
    }
    int64_t cut = 0;
    for (int64_t u = 0; u < n; ++u) {
      for (int64_t v : g.neighbors(u)) {
        if (u < v && owner[u] != owner[v]) ++cut;
      }
    }
    const int64_t edges = g.num_undirected_edges();
    // Every client's size for small K (the committed run records list them the same way).
    std::string sizes;
    if (partition->num_clients() <= 20) {
      for (const auto& client : partition->clients) {
        absl::StrAppend(&sizes, sizes.empty() ? ",\"client_sizes\":[" : ",", client.size());
      }
      sizes += "]";
    }
    std::printf(
        "%s\n",
        absl::StrFormat("{\"dataset\":\"%s\",\"num_nodes\":%d,\"num_edges\":%d,"
                        "\"partitioner\":\"%s\",\"clients\":%d,\"seed\":%d,\"load_s\":%.3f,"
                        "\"partition_wall_s\":%.3f,\"partition_cpu_s\":%.3f,\"nodes_held\":%d,"
                        "\"client_min\":%d,\"client_max\":%d,\"cut_edges\":%d,"
                        "\"cut_fraction\":%.4f,\"partition_hash\":\"%016x\"%s%s}",
                        spec, n, edges, absl::GetFlag(FLAGS_partitioner),
                        partition->num_clients(), seed, load_s, wall_s, cpu_s, held, min_size,
                        max_size, cut, edges > 0 ? static_cast<double>(cut) / edges : 0.0, hash,
                        phases, sizes)
            .c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace fgl::graph

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return fgl::graph::Main();
}
