// Training-epoch time (forward, backward, Adam step) of each model on Cora and Coauthor Physics,
// and the SpMM kernel against LibTorch's sparse mm, in a process set up as the run binaries are. Needs $FGL_DATA_DIR for the real graphs.
//   FGL_DATA_DIR=../shared/data bazel run //nn:nn_benchmark -- --benchmark_filter=Cora
#include <ATen/record_function.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "c10/util/string_utils.h"
#include "graph/dataset.h"
#include "graph/datasets.h"
#include "graph/partition/partitioner_registry.h"
#include "nn/adam.h"
#include "nn/cpu_kernels.h"
#include "nn/losses/losses.h"
#include "nn/memory.h"
#include "nn/models/gnn_model.h"
#include "nn/ops/spmm.h"
#include "nn/threads.h"

namespace fgl::nn {
namespace {

struct Loaded {
  graph::Dataset data;
  std::unique_ptr<GraphView> view;
  std::unique_ptr<NodeFeatures> x;
  torch::Tensor train_mask;
};

// A graph ready to train on: its view, sparse features and a random 20% training mask.
std::unique_ptr<Loaded> Prepare(graph::Dataset data) {
  auto l = std::make_unique<Loaded>();
  l->data = std::move(data);
  l->view = std::make_unique<GraphView>(*GraphView::Create(l->data.graph));
  l->x = std::make_unique<NodeFeatures>(NodeFeatures::WithSparseCopy(l->data.features));
  l->train_mask = torch::rand({l->data.num_nodes()}) < 0.2;
  return l;
}

// Loaded once per process; nullptr when the files are absent.
Loaded* Get(const std::string& name) {
  static auto* cache = new std::map<std::string, std::unique_ptr<Loaded>>;
  auto it = cache->find(name);
  if (it != cache->end()) return it->second.get();
  std::unique_ptr<Loaded> l;
  const std::string root = graph::ResolveDataDir("");
  if (graph::DatasetPresent(name, root)) {
    auto d = graph::LoadDataset(name, root);
    if (d.ok()) l = Prepare(*std::move(d));
  }
  return (*cache)[name] = std::move(l), (*cache)[name].get();
}

const char* const kModels[] = {"gcn",  "gat:heads=8,hidden=8", "sage", "gin",
                               "sgc:k=2", "appnp:k=10,alpha=0.1", "mlp", "gcn:hidden=16"};

void TrainEpoch(benchmark::State& state, const std::string& dataset) {
  SetComputeThreads(static_cast<int>(state.range(1)));
  const std::string spec = kModels[state.range(0)];
  state.SetLabel(spec + " threads=" + std::to_string(state.range(1)));
  Loaded* l = Get(dataset);
  if (!l) {
    state.SkipWithError("dataset files missing: set FGL_DATA_DIR");
    return;
  }
  torch::manual_seed(0);
  auto model = *MakeModel(spec, l->data.num_features(), l->data.num_classes);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.01).weight_decay(5e-4));
  model->train();
  const GraphSizedThreads threads(l->data.num_nodes());  // as the trainers
  for (auto _ : state) {
    opt.zero_grad();
    torch::Tensor loss = MaskedCrossEntropy(model->forward(*l->x, *l->view).logits,
                                            l->data.labels, l->train_mask);
    loss.backward();
    opt.step();
  }
  state.SetItemsProcessed(state.iterations() * l->data.graph.num_entries());
}

void BM_TrainEpochCora(benchmark::State& state) { TrainEpoch(state, "cora"); }
void BM_TrainEpochPhysics(benchmark::State& state) { TrainEpoch(state, "coauthor_physics"); }
BENCHMARK(BM_TrainEpochCora)->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainEpochPhysics)->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {1, 2}})->Unit(benchmark::kMillisecond);
// The graphs between Cora (2,708 nodes) and Physics (34,493), for GCN and GraphSAGE at one and
// two threads: where a second intra-op thread starts to pay.
void BM_TrainEpochPhoto(benchmark::State& state) { TrainEpoch(state, "amazon_photo"); }
void BM_TrainEpochComputers(benchmark::State& state) { TrainEpoch(state, "amazon_computers"); }
void BM_TrainEpochCS(benchmark::State& state) { TrainEpoch(state, "coauthor_cs"); }
BENCHMARK(BM_TrainEpochPhoto)->ArgsProduct({{0, 2}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainEpochComputers)->ArgsProduct({{0, 2}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainEpochCS)->ArgsProduct({{0, 2}, {1, 2}})->Unit(benchmark::kMillisecond);

// Issue #69: what an epoch costs at the size of one client of FedAvg Cora-10 (Louvain, seed 2024:
// client 0, a few hundred nodes), against LibTorch's floor for dispatching an op. The counters say
// how many ATen ops (`ops`) and autograd backward functions (`backward_fns`) one epoch dispatches,
// counted by a RecordFunction observer over one untimed epoch; BM_DispatchFloor times one trivial
// op, so ops × that time is what an epoch of this size costs before any arithmetic.
Loaded* CoraClient() {
  static Loaded* client = [] () -> Loaded* {
    Loaded* cora = Get("cora");
    if (!cora) return nullptr;
    auto partitioner = graph::MakePartitioner("louvain");
    if (!partitioner.ok()) return nullptr;
    auto partition = (*partitioner)->Run(cora->data, 10, 2024);
    if (!partition.ok()) return nullptr;
    auto sub = graph::SubDataset(cora->data, partition->clients[0]);
    if (!sub.ok()) return nullptr;
    return Prepare(*std::move(sub)).release();  // kept for the process, as Get's
  }();
  return client;
}

void BM_TrainEpochCoraClient(benchmark::State& state) {
  SetComputeThreads(1);
  Loaded* l = CoraClient();
  if (!l) {
    state.SkipWithError("dataset files missing: set FGL_DATA_DIR");
    return;
  }
  state.SetLabel("gcn, " + std::to_string(l->data.num_nodes()) + " nodes, threads=1");
  torch::manual_seed(0);
  auto model = *MakeModel("gcn", l->data.num_features(), l->data.num_classes);
  Adam opt(model->parameters(), torch::optim::AdamOptions(0.01).weight_decay(5e-4));  // as the clients
  model->train();
  auto epoch = [&] {
    opt.zero_grad();
    torch::Tensor loss = MaskedCrossEntropy(model->forward(*l->x, *l->view).logits, l->data.labels, l->train_mask);
    loss.backward();
    opt.step();
  };
  epoch();  // warm
  // RecordFunction takes a plain function pointer: the counts live in statics.
  static std::atomic<int64_t> ops, backward_fns;
  ops = 0;
  backward_fns = 0;
  const at::CallbackHandle handle = at::addGlobalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& f) -> std::unique_ptr<at::ObserverContext> {
        (f.scope() == at::RecordScope::BACKWARD_FUNCTION ? backward_fns : ops)++;
        return nullptr;
      }).scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  epoch();
  at::removeCallback(handle);
  for (auto _ : state) epoch();
  state.counters["ops"] = static_cast<double>(ops.load());
  state.counters["backward_fns"] = static_cast<double>(backward_fns.load());
}
BENCHMARK(BM_TrainEpochCoraClient)->Unit(benchmark::kMicrosecond);

// One trivial op on a one-element tensor: without autograd, and recording a graph node.
void BM_DispatchFloor(benchmark::State& state) {
  SetComputeThreads(1);
  const bool grad = state.range(0) == 1;
  state.SetLabel(grad ? "add, requires_grad" : "add");
  torch::Tensor a = torch::ones({1}).requires_grad_(grad);
  for (auto _ : state) benchmark::DoNotOptimize(a.add(a));
}
BENCHMARK(BM_DispatchFloor)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);

void BM_SpmmCora(benchmark::State& state) {
  SetComputeThreads(1);
  Loaded* l = Get("cora");
  if (!l) {
    state.SkipWithError("dataset files missing: set FGL_DATA_DIR");
    return;
  }
  const bool reference = state.range(0) == 1;
  state.SetLabel(reference ? "torch sparse_coo mm" : "fgl Spmm");
  const CsrPattern& p = l->view->adjacency_with_self_loops();
  const torch::Tensor& w = l->view->gcn_weights();
  torch::Tensor x = torch::randn({l->data.num_nodes(), 64});
  for (auto _ : state) {
    benchmark::DoNotOptimize(reference ? SpmmReference(p, w, x) : Spmm(p, w, x));
  }
  state.SetItemsProcessed(state.iterations() * p.nnz() * 64);
}
BENCHMARK(BM_SpmmCora)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);

// FedMpae's reconstruction loss and its gradient (one local epoch's share), on a whole graph:
// Cora (2,708 nodes, 7 classes) and Amazon Computers (13,752 nodes, 10 classes: about one
// Coauthor-Physics client at M = 3).
void BM_ReconstructionMse(benchmark::State& state) {
  SetComputeThreads(1);
  const std::string name = state.range(0) == 0 ? "cora" : "amazon_computers";
  state.SetLabel(name);
  Loaded* l = Get(name);
  if (!l) {
    state.SkipWithError("dataset files missing: set FGL_DATA_DIR");
    return;
  }
  torch::manual_seed(0);
  torch::Tensor z = torch::randn({l->data.num_nodes(), l->data.num_classes}).requires_grad_(true);
  for (auto _ : state) {
    torch::Tensor loss = InnerProductReconstructionMse(z, *l->view);
    loss.backward();
    benchmark::DoNotOptimize(z.grad().data_ptr());
    z.mutable_grad().reset();
  }
  state.SetItemsProcessed(state.iterations() * l->data.num_nodes() * l->data.num_nodes());
}
BENCHMARK(BM_ReconstructionMse)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

// FedEgo's Cora model (Θ 1433×512, four 512×512 SAGE weights, biases and a 512×7 head: 1.8 M
// parameters), each with a random gradient.
std::vector<torch::Tensor> FedEgoCoraParameters() {
  torch::manual_seed(0);
  std::vector<torch::Tensor> params;
  for (auto shape : std::vector<std::vector<int64_t>>{{1433, 512}, {512}, {512, 512}, {512, 512}, {512},
                                                     {512, 512}, {512, 512}, {512}, {7, 512}, {7}}) {
    torch::Tensor p = torch::randn(shape).requires_grad_(true);
    p.mutable_grad() = torch::randn(shape);
    params.push_back(p);
  }
  return params;
}

// One Adam step over FedEgo's Cora model, the step every mini-batch of a FedEgo client pays.
void BM_AdamStepFedEgoCora(benchmark::State& state) {
  SetComputeThreads(1);
  std::vector<torch::Tensor> params = FedEgoCoraParameters();
  Adam adam(params, torch::optim::AdamOptions(3e-4).weight_decay(state.range(0) ? 5e-4 : 0.0));
  int64_t n = 0;
  for (auto& p : params) n += p.numel();
  for (auto _ : state) adam.step();
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_AdamStepFedEgoCora)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

// The same step where a fraction (range(0) percent) of the weights have a zero gradient and a
// first moment decayed to between 2^-100 and 2^-149 (a feature absent from a client's recent
// batches), the state nn::Adam steps in closed form; the moments are restored before each step.
void BM_AdamStepDecayedMoments(benchmark::State& state) {
  SetComputeThreads(1);
  std::vector<torch::Tensor> params = FedEgoCoraParameters();
  Adam adam(params, torch::optim::AdamOptions(3e-4));
  adam.step();  // creates the moments
  std::vector<torch::Tensor> decayed;
  const double fraction = state.range(0) / 100.0;
  for (auto& p : params) {
    const torch::Tensor zero = torch::rand(p.sizes()) < fraction;
    p.mutable_grad() = torch::where(zero, torch::zeros_like(p), p.grad());
    const torch::Tensor tiny =
        (torch::rand(p.sizes(), torch::kFloat64) * torch::pow(2.0, -torch::randint(100, 150, p.sizes()).to(torch::kFloat64)))
            .to(torch::kFloat32);
    auto& s = static_cast<torch::optim::AdamParamState&>(*adam.state().at(c10::guts::to_string(p.unsafeGetTensorImpl())));
    decayed.push_back(torch::where(zero, tiny, s.exp_avg()));
  }
  int64_t n = 0;
  for (auto& p : params) n += p.numel();
  for (auto _ : state) {
    state.PauseTiming();
    for (size_t i = 0; i < params.size(); ++i) {
      static_cast<torch::optim::AdamParamState&>(*adam.state().at(c10::guts::to_string(params[i].unsafeGetTensorImpl())))
          .exp_avg()
          .copy_(decayed[i]);
    }
    state.ResumeTiming();
    adam.step();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_AdamStepDecayedMoments)->Arg(0)->Arg(3)->Arg(30)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fgl::nn

// As every run binary starts: the same kernels, freed tensor memory kept for reuse (without it a
// Physics epoch spends a third of its time zero-filling fresh pages).
int main(int argc, char** argv) {
  fgl::nn::PinCpuKernels(argv);
  fgl::nn::ReuseFreedTensorMemory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
