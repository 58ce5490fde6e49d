// FedTAD's server step (one round of data-free distillation: I = 5 iterations of 1 generator step
// and 5 distillation steps) for 10 teachers, at the shapes of Cora (1433 features, 7 classes) and
// Coauthor Physics (8415 features, 5 classes). Synthetic teachers: the cost does not depend on
// their values. Not part of `bazel test`: bazel run -c opt //methods/fedtad:fedtad_benchmark
#include "benchmark/benchmark.h"
#include "methods/fedtad/distillation.h"
#include "nn/memory.h"
#include "nn/models/gnn_model.h"
#include "nn/threads.h"

namespace fgl::methods::fedtad {
namespace {

void BM_ServerRound(benchmark::State& state) {
  nn::ReuseFreedTensorMemory();  // as the run binaries do
  nn::SetComputeThreads(1);  // as in a federated run: one intra-op thread
  const int64_t features = state.range(0), classes = state.range(1), num_teachers = 10;
  const std::string spec = "gcn:layers=2,hidden=64,dropout=0.5";
  DistillationOptions o = FromParams(FedTadParams(), false);
  o.dropout_at_eval = state.range(2) != 0;
  auto distiller = DataFreeDistiller::Create(spec, features, classes, o, 1, torch::kCPU);
  CHECK(distiller.ok());
  auto student = nn::MakeModel(spec, features, classes);
  CHECK(student.ok());
  fl::NamedTensors live;
  for (const auto& item : (*student)->named_parameters(true)) live.emplace_back(item.key(), item.value());
  std::vector<Teacher> teachers;
  for (int k = 0; k < num_teachers; ++k) {
    Teacher t;
    for (const auto& [name, p] : live) t.parameters.emplace_back(name, torch::randn_like(p) * 0.05);
    t.weight = torch::full({classes}, 1.0f / num_teachers);
    teachers.push_back(std::move(t));
  }
  uint64_t round = 0;
  for (auto _ : state) CHECK((*distiller)->Distill(live, teachers, 0, ++round).ok());
}
// {features, classes, dropout at evaluation}
BENCHMARK(BM_ServerRound)->Args({1433, 7, 0})->Args({1433, 7, 1})->Args({8415, 5, 0})->Args({8415, 5, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fgl::methods::fedtad
