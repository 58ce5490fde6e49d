// Load and partition times on the real datasets (needs $FGL_DATA_DIR), and on csbm.
//   FGL_DATA_DIR=../shared/data bazel run //graph:graph_benchmark
#include <string>

#include "benchmark/benchmark.h"
#include "graph/csbm.h"
#include "graph/datasets.h"
#include "graph/partition/partitioner_registry.h"

namespace fgl::graph {
namespace {

const char* const kDatasets[] = {"cora", "citeseer", "amazon_photo", "amazon_computers",
                                 "coauthor_cs", "coauthor_physics"};

void BM_LoadDataset(benchmark::State& state) {
  const std::string name = kDatasets[state.range(0)];
  state.SetLabel(name);
  const std::string root = ResolveDataDir("");
  if (!DatasetPresent(name, root)) {
    state.SkipWithError(("dataset files missing under " + root).c_str());
    return;
  }
  int64_t edges = 0;
  for (auto _ : state) {
    auto d = LoadDataset(name, root);
    if (!d.ok()) {
      state.SkipWithError(std::string(d.status().message()).c_str());
      return;
    }
    edges = d->graph.num_entries();
    benchmark::DoNotOptimize(d->features.data_ptr<float>());
  }
  state.SetItemsProcessed(state.iterations() * edges);
}
BENCHMARK(BM_LoadDataset)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->Iterations(3);

// Loading plus Louvain into 10 clients: the target is < 5 s for coauthor_physics.
void BM_LoadAndLouvain10(benchmark::State& state) {
  const std::string name = kDatasets[state.range(0)];
  state.SetLabel(name);
  const std::string root = ResolveDataDir("");
  if (!DatasetPresent(name, root)) {
    state.SkipWithError(("dataset files missing under " + root).c_str());
    return;
  }
  auto louvain = MakePartitioner("louvain");
  for (auto _ : state) {
    auto d = LoadDataset(name, root);
    auto p = (*louvain)->Run(*d, 10, 2024);
    if (!p.ok()) {
      state.SkipWithError(std::string(p.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(p->clients.data());
  }
}
BENCHMARK(BM_LoadAndLouvain10)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_PartitionCsbm(benchmark::State& state) {
  static const char* const kSpecs[] = {"louvain", "metis", "label_dirichlet:alpha=0.5", "random"};
  const std::string spec = kSpecs[state.range(0)];
  state.SetLabel(spec);
  CsbmOptions o;
  o.num_nodes = 50000;
  o.num_features = 8;
  auto d = MakeCsbm(o, 1);
  auto p = MakePartitioner(spec);
  for (auto _ : state) {
    auto part = (*p)->Run(*d, 10, 2024);
    benchmark::DoNotOptimize(part->clients.data());
  }
  state.SetItemsProcessed(state.iterations() * d->graph.num_entries());
}
BENCHMARK(BM_PartitionCsbm)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fgl::graph
