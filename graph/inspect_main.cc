// Prints a dataset's statistics and, with --partitioner, its client partition. The last line of
// stdout is one JSON object (dataset, num_nodes, num_edges, num_features, num_classes, ...).
//
//   bazel run //graph:inspect -- --dataset=cora --partitioner=louvain --clients=10 --seed=2024
#include <chrono>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/homophily.h"
#include "graph/partition/partition_cache.h"
#include "graph/partition/partitioner_registry.h"
#include "graph/random.h"
#include "graph/split.h"

ABSL_FLAG(std::string, dataset, "csbm", "Dataset name or spec, e.g. cora or csbm:num_nodes=5000.");
ABSL_FLAG(std::string, data_dir, "", "Dataset root; else $FGL_DATA_DIR, else ./data.");
ABSL_FLAG(std::string, partitioner, "",
          "Partitioner spec (louvain, metis, label_dirichlet:alpha=0.5, random, node_level, "
          "fedego, reference:<dir>); empty prints the whole graph only.");
ABSL_FLAG(int, clients, 10, "Number of clients (node_level: the node count).");
ABSL_FLAG(uint64_t, seed, 2024, "Master seed (partition; csbm generation).");
ABSL_FLAG(std::string, split, "",
          "Optional per-client split rule, e.g. stratified:train=0.2,val=0.4; adds split sizes. "
          "A partition with its own splits (reference:<dir>) always shows those instead.");
ABSL_FLAG(std::string, cache_dir, "",
          "Partition cache directory; default $FGL_CACHE_DIR/partitions or ~/.cache/fgl/partitions. "
          "'none' disables it.");

namespace fgl::graph {
namespace {

std::string JsonList(const std::vector<int64_t>& v) { return absl::StrCat("[", absl::StrJoin(v, ","), "]"); }

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, "\\u00", c < 16 ? "0" : "", absl::Hex(c));
      continue;
    }
    out.push_back(c);
  }
  return out + "\"";
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::vector<int64_t> CountLabels(const Dataset& d, const std::vector<int64_t>& nodes) {
  std::vector<int64_t> counts(d.num_classes, 0);
  const int64_t* y = d.labels.data_ptr<int64_t>();
  for (int64_t v : nodes) ++counts[y[v]];
  return counts;
}

int Run() {
  const std::string data_dir = ResolveDataDir(absl::GetFlag(FLAGS_data_dir));
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Dataset> loaded = LoadDataset(absl::GetFlag(FLAGS_dataset), data_dir, seed);
  if (!loaded.ok()) {
    LOG(ERROR) << loaded.status();
    return 1;
  }
  const double load_seconds = Seconds(start);
  const Dataset& d = *loaded;
  int64_t components = 0;
  ConnectedComponents(d.graph, &components);
  int64_t isolated = 0;
  for (int64_t v = 0; v < d.num_nodes(); ++v) isolated += d.graph.degree(v) == 0;
  std::string json = absl::StrCat(
      "{\"dataset\":", JsonString(d.name), ",\"num_nodes\":", d.num_nodes(),
      ",\"num_edges\":", d.graph.num_undirected_edges(), ",\"num_features\":", d.num_features(),
      ",\"num_classes\":", d.num_classes, ",\"label_counts\":", JsonList(LabelCounts(d)),
      ",\"isolated_nodes\":", isolated, ",\"components\":", components,
      ",\"edge_homophily\":", EdgeHomophily(d.graph, d.labels),
      ",\"provided_splits\":", d.provided_splits.size(), ",\"load_seconds\":", load_seconds);
  if (!d.provided_splits.empty()) {
    SplitSizes s = CountSplit(d.provided_splits[0]);
    absl::StrAppend(&json, ",\"provided_split_0\":{\"train\":", s.train, ",\"val\":", s.val,
                    ",\"test\":", s.test, "}");
  }
  const std::string spec = absl::GetFlag(FLAGS_partitioner);
  if (!spec.empty()) {
    absl::StatusOr<std::unique_ptr<Partitioner>> partitioner = MakePartitioner(spec);
    if (!partitioner.ok()) {
      LOG(ERROR) << partitioner.status();
      return 1;
    }
    std::string cache_dir = absl::GetFlag(FLAGS_cache_dir);
    if (cache_dir.empty()) cache_dir = DefaultPartitionCacheDir();
    if (cache_dir == "none") cache_dir.clear();
    const int clients = absl::GetFlag(FLAGS_clients);
    start = std::chrono::steady_clock::now();
    bool hit = false;
    absl::StatusOr<Partition> p = CachedPartition(**partitioner, d, clients, seed, cache_dir, &hit);
    if (!p.ok()) {
      LOG(ERROR) << p.status();
      return 1;
    }
    const double partition_seconds = Seconds(start);
    // An edge is kept when some client holds both endpoints.
    std::set<std::pair<int64_t, int64_t>> kept;
    std::vector<std::string> client_json;
    for (int k = 0; k < p->num_clients(); ++k) {
      absl::StatusOr<Dataset> sub = SubDataset(d, p->clients[k]);
      if (!sub.ok()) {
        LOG(ERROR) << sub.status();
        return 1;
      }
      if (!p->server_keeps_topology) {
        for (int64_t u = 0; u < sub->num_nodes(); ++u)
          for (int64_t v : sub->graph.neighbors(u))
            if (u < v) {
              const int64_t a = p->clients[k][u], b = p->clients[k][v];
              kept.emplace(std::min(a, b), std::max(a, b));
            }
      }
      std::string c = absl::StrCat("{\"num_nodes\":", sub->num_nodes(),
                                   ",\"num_edges\":", sub->graph.num_undirected_edges(),
                                   ",\"label_counts\":", JsonList(CountLabels(d, p->clients[k])));
      const std::string split_rule = absl::GetFlag(FLAGS_split);
      if (!p->client_splits.empty()) {
        // The partition's own masks (a paper's saved partition): what a run uses.
        SplitSizes z = CountSplit(p->client_splits[k]);
        absl::StrAppend(&c, ",\"split\":{\"train\":", z.train, ",\"val\":", z.val,
                        ",\"test\":", z.test, ",\"source\":\"partition\"}");
      } else if (!split_rule.empty()) {
        absl::StatusOr<NodeSplit> s = MakeSplit(split_rule, *sub, Rng::Derive(seed, absl::StrCat("split/", k)));
        if (!s.ok()) {
          LOG(ERROR) << s.status();
          return 1;
        }
        SplitSizes z = CountSplit(*s);
        absl::StrAppend(&c, ",\"split\":{\"train\":", z.train, ",\"val\":", z.val, ",\"test\":", z.test, "}");
      }
      client_json.push_back(c + "}");
    }
    std::vector<int64_t> sizes;
    for (const auto& c : p->clients) sizes.push_back(static_cast<int64_t>(c.size()));
    const int64_t dropped =
        p->server_keeps_topology ? 0 : d.graph.num_undirected_edges() - static_cast<int64_t>(kept.size());
    absl::StrAppend(&json, ",\"partitioner\":", JsonString((*partitioner)->Fingerprint()),
                    ",\"num_clients\":", p->num_clients(), ",\"seed\":", seed,
                    ",\"dropped_edges\":", dropped, ",\"client_sizes\":", JsonList(sizes),
                    ",\"server_nodes\":", p->server_nodes.size(),
                    ",\"server_keeps_topology\":", p->server_keeps_topology ? "true" : "false",
                    ",\"partition_seconds\":", partition_seconds,
                    ",\"cache_hit\":", hit ? "true" : "false", ",\"clients\":[",
                    absl::StrJoin(client_json, ","), "]");
  }
  std::cout << json << "}" << std::endl;
  return 0;
}

}  // namespace
}  // namespace fgl::graph

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return fgl::graph::Run();
}
