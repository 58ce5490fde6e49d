// Centralised trainer: trains one model for several seeds on one dataset split and prints one
// JSON object as its last line (test_acc_mean, test_acc_std, epoch_ms, per-run values).
//
//   bazel run //nn:train -- --dataset=cora --model=gcn --split=public --runs=10 --seed=0
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/random.h"
#include "graph/split.h"
#include "nn/device.h"
#include "nn/cpu_kernels.h"
#include "nn/memory.h"
#include "nn/threads.h"
#include "nn/trainer.h"

ABSL_FLAG(std::string, dataset, "cora", "Dataset name or spec (graph/datasets.h).");
ABSL_FLAG(std::string, data_dir, "", "Dataset root; else $FGL_DATA_DIR, else ./data.");
ABSL_FLAG(std::string, model, "gcn", "Model spec, e.g. gcn:hidden=64 or gat:heads=8 (nn/models).");
ABSL_FLAG(std::string, split, "public",
          "public (the dataset's own split 0) or a graph/split.h rule, e.g. per_class:train=20,val=30.");
ABSL_FLAG(int, runs, 10, "Training runs; run r uses seed + r.");
ABSL_FLAG(uint64_t, seed, 0, "Master seed: model init, dropout and random splits.");
ABSL_FLAG(int, epochs, 200, "Training epochs per run.");
ABSL_FLAG(double, lr, 0.01, "Adam learning rate.");
ABSL_FLAG(double, weight_decay, 5e-4, "Adam weight decay (L2 on all parameters).");
ABSL_FLAG(int, patience, 0, "Early stopping on validation accuracy; 0 trains all epochs.");
ABSL_FLAG(std::string, device, "cpu", "cpu or cuda[:i] (needs a CUDA LibTorch build).");
ABSL_FLAG(int, threads, 1,
          "CPU threads for LibTorch and OpenBLAS. 1 is fastest for Cora-sized graphs here.");

namespace fgl::nn {
namespace {

int Run() {
  SetComputeThreads(absl::GetFlag(FLAGS_threads));
  absl::StatusOr<torch::Device> device = ParseDevice(absl::GetFlag(FLAGS_device));
  if (!device.ok()) {
    LOG(ERROR) << device.status();
    return 1;
  }
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<graph::Dataset> data =
      graph::LoadDataset(absl::GetFlag(FLAGS_dataset), graph::ResolveDataDir(absl::GetFlag(FLAGS_data_dir)), seed);
  if (!data.ok()) {
    LOG(ERROR) << data.status();
    return 1;
  }
  absl::StatusOr<GraphView> view = GraphView::Create(data->graph, *device);
  if (!view.ok()) {
    LOG(ERROR) << view.status();
    return 1;
  }
  const NodeFeatures x = NodeFeatures::WithSparseCopy(data->features.to(*device));
  const torch::Tensor labels = data->labels.to(*device);
  std::string split_rule = absl::GetFlag(FLAGS_split);
  if (split_rule == "public") split_rule = "provided:index=0";
  TrainOptions options;
  options.epochs = absl::GetFlag(FLAGS_epochs);
  options.lr = absl::GetFlag(FLAGS_lr);
  options.weight_decay = absl::GetFlag(FLAGS_weight_decay);
  options.patience = absl::GetFlag(FLAGS_patience);
  std::vector<double> accs, vals, ms;
  std::string model_spec;
  for (int r = 0; r < absl::GetFlag(FLAGS_runs); ++r) {
    const uint64_t run_seed = seed + r;
    absl::StatusOr<graph::NodeSplit> split =
        graph::MakeSplit(split_rule, *data, graph::Rng::Derive(run_seed, "split"));
    if (!split.ok()) {
      LOG(ERROR) << split.status();
      return 1;
    }
    graph::NodeSplit s{split->train.to(*device), split->val.to(*device), split->test.to(*device)};
    torch::manual_seed(run_seed);
    absl::StatusOr<std::shared_ptr<GnnModel>> model =
        MakeModel(absl::GetFlag(FLAGS_model), data->num_features(), data->num_classes);
    if (!model.ok()) {
      LOG(ERROR) << model.status();
      return 1;
    }
    (*model)->to(*device);
    model_spec = (*model)->spec();
    absl::StatusOr<TrainResult> res = TrainNodeClassifier(**model, x, *view, labels, s, options);
    if (!res.ok()) {
      LOG(ERROR) << res.status();
      return 1;
    }
    LOG(INFO) << "run " << r << ": val " << res->val_acc << " test " << res->test_acc
              << " best epoch " << res->best_epoch << " epoch " << res->median_epoch_ms << " ms";
    accs.push_back(res->test_acc);
    vals.push_back(res->val_acc);
    ms.push_back(res->median_epoch_ms);
  }
  const double mean = std::accumulate(accs.begin(), accs.end(), 0.0) / accs.size();
  double var = 0;
  for (double a : accs) var += (a - mean) * (a - mean);
  const double stdev = accs.size() > 1 ? std::sqrt(var / (accs.size() - 1)) : 0.0;
  std::vector<double> sorted_ms = ms;
  std::sort(sorted_ms.begin(), sorted_ms.end());
  std::cout << "{\"dataset\":\"" << data->name << "\",\"model\":\"" << model_spec
            << "\",\"split\":\"" << split_rule << "\",\"runs\":" << accs.size()
            << ",\"seed\":" << seed << ",\"epochs\":" << options.epochs << ",\"lr\":" << options.lr
            << ",\"weight_decay\":" << options.weight_decay
            << ",\"selection\":\"best_val_epoch\",\"test_acc_mean\":" << mean
            << ",\"test_acc_std\":" << stdev << ",\"epoch_ms\":" << sorted_ms[sorted_ms.size() / 2]
            << ",\"threads\":" << at::get_num_threads() << ",\"test_acc\":["
            << absl::StrJoin(accs, ",") << "],\"val_acc\":[" << absl::StrJoin(vals, ",")
            << "],\"epoch_ms_per_run\":[" << absl::StrJoin(ms, ",") << "]}" << std::endl;
  return 0;
}

}  // namespace
}  // namespace fgl::nn

int main(int argc, char** argv) {
  fgl::nn::PinCpuKernels(argv);
  fgl::nn::ReuseFreedTensorMemory();
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return fgl::nn::Run();
}
