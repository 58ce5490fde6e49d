// Runs one federated experiment and prints one JSON object as the last stdout line.
//
//   bazel run //experiments:run -- --dataset=cora --partitioner=louvain --clients=10
//       --method=fedavg --rounds=100 --seed=2024 --out=/tmp/run
//
// Or from an Experiment textproto, for all its seeds (one JSON line per seed):
//   bazel run //experiments:run -- --spec=my_experiment.textproto
//       --set="clients=5;eval.dropout_at_eval=true"
//
// With --out, writes DIR/rounds.jsonl (one line per round), DIR/result.json and, for global
// evaluation, DIR/final_model.pb (the last broadcast; for a spec: DIR/seed_<s>/...).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "experiments/spec.h"
#include "fl/simulator.h"
#include "graph/io/file.h"
#include "glog/logging.h"
#include "nn/memory.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, dataset, "cora", "Dataset name or spec (graph/datasets.h).");
ABSL_FLAG(std::string, data_dir, "", "Dataset root; else $FGL_DATA_DIR, else ./data.");
ABSL_FLAG(std::string, partitioner, "louvain", "Partitioner spec (graph/partition).");
ABSL_FLAG(int, clients, 10, "Number of clients.");
ABSL_FLAG(uint64_t, partition_seed, 2024,
          "Seed of the partition and the per-client splits; fixed across training seeds, as the "
          "papers do.");
ABSL_FLAG(std::string, split, "stratified:train=0.2,val=0.4", "Per-client split rule (graph/split.h).");
ABSL_FLAG(std::string, method, "fedavg", "fedavg, fedprox, local or centralized.");
ABSL_FLAG(std::string, method_params, "", "Method parameters, e.g. mu=0.01 (comma-separated).");
ABSL_FLAG(std::string, model, "gcn:layers=2,hidden=64,dropout=0.5",
          "Model spec (nn/models); several separated by ';' are assigned to client k mod n.");
ABSL_FLAG(std::string, shared_group, "", "What averaging methods exchange: '' (all), head or body.");
ABSL_FLAG(int, rounds, 100, "Communication rounds.");
ABSL_FLAG(int, local_epochs, 3, "Local epochs per round.");
ABSL_FLAG(double, lr, 0.01, "Adam learning rate (clients).");
ABSL_FLAG(double, weight_decay, 5e-4, "Adam weight decay (clients).");
ABSL_FLAG(double, client_fraction, 1.0, "Fraction of clients sampled per round, in (0, 1].");
ABSL_FLAG(std::string, eval_model, "global",
          "Model scored on each client: global, local or personalized.");
ABSL_FLAG(std::string, eval_weighting, "node", "Client averaging: node (by node count) or unweighted.");
ABSL_FLAG(std::string, eval_round, "best_val", "Reported round: best_val, last or best_test (optimistic).");
ABSL_FLAG(bool, dropout_at_eval, false, "Keep dropout on when evaluating (FedTAD's official code).");
ABSL_FLAG(uint64_t, seed, 2024, "Training seed: initialisation, dropout, client sampling.");
ABSL_FLAG(std::string, cache_dir, "", "Partition cache; default ~/.cache/fgl/partitions, 'none' off.");
ABSL_FLAG(std::string, device, "cpu", "cpu or cuda[:i].");
ABSL_FLAG(int, threads, 1, "CPU threads (LibTorch and OpenBLAS).");
ABSL_FLAG(bool, strict, false, "Abort when a client fails instead of leaving it out of the round.");
ABSL_FLAG(std::string, out, "", "Directory for rounds.jsonl and result.json (created).");
ABSL_FLAG(std::string, spec, "",
          "Experiment textproto (experiments/proto/experiment.proto); replaces the experiment "
          "flags above, except --data_dir, --cache_dir, --device, --threads, --out.");
ABSL_FLAG(std::string, set, "", "With --spec: ';'-separated overrides, e.g. \"clients=5;seeds=7\".");
ABSL_FLAG(std::string, checkpoint_dir, "", "Directory for checkpoint.pb (must exist).");
ABSL_FLAG(int, checkpoint_every, 0, "Write a checkpoint every this many rounds; 0 never.");
ABSL_FLAG(bool, resume, false, "Continue from --checkpoint_dir/checkpoint.pb if it matches this run.");

namespace fgl::experiments {
namespace {

// Flags that shape how a run executes, not what it computes.
void ApplyRuntimeFlags(fl::FederationOptions& o) {
  o.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  o.device = absl::GetFlag(FLAGS_device);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.strict = absl::GetFlag(FLAGS_strict);
  o.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  o.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  o.resume = absl::GetFlag(FLAGS_resume);
}

// The experiment flags as an Experiment spec, resolved and validated like a spec file.
absl::StatusOr<fl::FederationOptions> OptionsFromFlags() {
  proto::Experiment e;
  e.set_dataset(absl::GetFlag(FLAGS_dataset));
  e.set_data_dir(absl::GetFlag(FLAGS_data_dir));
  e.set_partitioner(absl::GetFlag(FLAGS_partitioner));
  e.set_clients(absl::GetFlag(FLAGS_clients));
  e.set_partition_seed(absl::GetFlag(FLAGS_partition_seed));
  e.set_split(absl::GetFlag(FLAGS_split));
  e.set_method(absl::GetFlag(FLAGS_method));
  e.set_model(absl::GetFlag(FLAGS_model));
  e.set_shared_group(absl::GetFlag(FLAGS_shared_group));
  e.set_rounds(absl::GetFlag(FLAGS_rounds));
  e.set_local_epochs(absl::GetFlag(FLAGS_local_epochs));
  e.set_lr(absl::GetFlag(FLAGS_lr));
  e.set_weight_decay(absl::GetFlag(FLAGS_weight_decay));
  e.set_client_fraction(absl::GetFlag(FLAGS_client_fraction));
  e.mutable_eval()->set_model(absl::GetFlag(FLAGS_eval_model));
  e.mutable_eval()->set_weighting(absl::GetFlag(FLAGS_eval_weighting));
  e.mutable_eval()->set_round(absl::GetFlag(FLAGS_eval_round));
  e.mutable_eval()->set_dropout_at_eval(absl::GetFlag(FLAGS_dropout_at_eval));
  for (absl::string_view kv : absl::StrSplit(absl::GetFlag(FLAGS_method_params), ',', absl::SkipEmpty())) {
    // "mu=0.01" is fedprox.mu when the method is fedprox: typed, as in spec files.
    if (absl::Status s = ApplySet(absl::StrCat(e.method(), ".", kv), &e); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--method_params: ", s.message()));
    }
  }
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  e.add_seeds(seed);
  FGL_ASSIGN_OR_RETURN(proto::Experiment resolved, Resolve(e, "flags"));
  if (GetMethodStatus(resolved.method()) != MethodStatus::kImplemented) {
    return absl::UnimplementedError(absl::StrCat("method '", resolved.method(), "' is not implemented yet"));
  }
  FGL_ASSIGN_OR_RETURN(fl::FederationOptions o, ToFederationOptions(resolved, seed));
  ApplyRuntimeFlags(o);
  return o;
}

std::string RoundJson(const fl::RoundRecord& r) {
  std::vector<std::string> clients;
  for (const fl::ClientRecord& c : r.clients) {
    clients.push_back(absl::StrCat(
        "{\"id\":", c.id, ",\"participated\":", c.participated ? "true" : "false",
        ",\"train_loss\":", std::isfinite(c.train_loss) ? absl::StrCat(c.train_loss) : "null",
        ",\"val_acc\":", c.val_acc, ",\"test_acc\":", c.test_acc, ",\"bytes_up\":", c.bytes_up,
        ",\"bytes_down\":", c.bytes_down, ",\"seconds\":", c.seconds, "}"));
  }
  return absl::StrCat("{\"round\":", r.round, ",\"val_acc\":", r.val_acc, ",\"test_acc\":", r.test_acc,
                      ",\"participants\":", r.participants, ",\"failed_clients\":", r.failed_clients,
                      ",\"bytes_up\":", r.bytes_up, ",\"bytes_down\":", r.bytes_down,
                      ",\"seconds\":", r.seconds, ",\"clients\":[", absl::StrJoin(clients, ","), "]}");
}

// One run: writes DIR/rounds.jsonl and DIR/result.json when `out` is set; returns the JSON line.
absl::StatusOr<std::string> RunOne(const fl::FederationOptions& o, const std::string& out);

int RunSpec() {
  absl::StatusOr<proto::Experiment> spec = LoadExperiment(absl::GetFlag(FLAGS_spec));
  if (!spec.ok()) {
    LOG(ERROR) << spec.status();
    return 1;
  }
  for (absl::string_view a : absl::StrSplit(absl::GetFlag(FLAGS_set), ';', absl::SkipEmpty())) {
    if (absl::Status s = ApplySet(std::string(a), &*spec); !s.ok()) {
      LOG(ERROR) << s;
      return 1;
    }
  }
  if (!absl::GetFlag(FLAGS_data_dir).empty()) spec->set_data_dir(absl::GetFlag(FLAGS_data_dir));
  absl::StatusOr<proto::Experiment> resolved = Resolve(*spec, absl::GetFlag(FLAGS_spec));
  if (!resolved.ok()) {
    LOG(ERROR) << resolved.status();
    return 1;
  }
  if (GetMethodStatus(resolved->method()) != MethodStatus::kImplemented) {
    LOG(ERROR) << absl::GetFlag(FLAGS_spec) << ": method '" << resolved->method() << "' is not implemented yet";
    return 2;
  }
  std::vector<double> accs;
  for (uint64_t seed : resolved->seeds()) {
    absl::StatusOr<fl::FederationOptions> o = ToFederationOptions(*resolved, seed);
    if (!o.ok()) {
      LOG(ERROR) << o.status();
      return 1;
    }
    ApplyRuntimeFlags(*o);
    const std::string out = absl::GetFlag(FLAGS_out);
    absl::StatusOr<std::string> json =
        RunOne(*o, out.empty() ? "" : absl::StrCat(out, "/seed_", seed));
    if (!json.ok()) {
      LOG(ERROR) << json.status();
      return 1;
    }
    std::cout << *json << std::endl;
  }
  return 0;
}

absl::StatusOr<std::string> RunOne(const fl::FederationOptions& o, const std::string& out) {
  std::ofstream rounds_file;
  const bool terminal = isatty(2);
  const auto start = std::chrono::steady_clock::now();
  if (!out.empty()) {
    FGL_RETURN_IF_ERROR(graph::io::MakeDirs(out));
    rounds_file.open(out + "/rounds.jsonl", std::ios::trunc);
    // The resolved configuration, as the simulator received it.
    std::ofstream(out + "/config.txt", std::ios::trunc) << o.Fingerprint() << "\nrounds=" << o.rounds
                                                        << "\nthreads=" << o.threads << "\n";
  }
  absl::StatusOr<fl::FederationResult> r = fl::RunFederation(o, [&](const fl::RoundRecord& rec) {
    if (rounds_file.is_open()) rounds_file << RoundJson(rec) << "\n" << std::flush;
    if (terminal) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cerr << absl::StrFormat("\rround %d/%d  val %.2f  test %.2f  ETA %.0fs   ", rec.round,
                                   o.rounds, rec.val_acc, rec.test_acc,
                                   elapsed / rec.round * (o.rounds - rec.round))
                << (rec.round == o.rounds ? "\n" : "") << std::flush;
    }
  });
  if (!r.ok()) return r.status();
  const std::string json = absl::StrCat(
      "{\"method\":\"", o.method, "\",\"dataset\":\"", o.dataset, "\",\"clients\":", o.clients,
      ",\"partitioner\":\"", o.partitioner, "\",\"partition_seed\":", o.partition_seed,
      ",\"seed\":", o.seed, ",\"model\":\"", o.model, "\",\"rounds\":", o.rounds,
      ",\"local_epochs\":", o.local_epochs, ",\"test_acc\":", r->test_acc,
      ",\"val_acc\":", r->val_acc, ",\"best_round\":", r->reported_round,
      ",\"bytes_up\":", r->bytes_up, ",\"bytes_down\":", r->bytes_down, ",\"wall_s\":", r->wall_s,
      ",\"train_s\":", r->train_s, ",\"protocol\":\"", r->protocol, "\",\"client_sizes\":[",
      absl::StrJoin(r->client_sizes, ","), "]}");
  if (!out.empty()) {
    std::ofstream(out + "/result.json", std::ios::trunc) << json << "\n";
    // The final global model as broadcast: a transport run (//fl:server) must match it bit for bit.
    if (!r->final_global.empty()) {
      std::ofstream(out + "/final_model.pb", std::ios::binary | std::ios::trunc) << r->final_global;
    }
  }
  return json;
}

int Run() {
  if (!absl::GetFlag(FLAGS_spec).empty()) return RunSpec();
  absl::StatusOr<fl::FederationOptions> o = OptionsFromFlags();
  if (!o.ok()) {
    LOG(ERROR) << o.status();
    return 1;
  }
  absl::StatusOr<std::string> json = RunOne(*o, absl::GetFlag(FLAGS_out));
  if (!json.ok()) {
    LOG(ERROR) << json.status();
    return 1;
  }
  std::cout << *json << std::endl;
  return 0;
}

}  // namespace
}  // namespace fgl::experiments

int main(int argc, char** argv) {
  fgl::nn::ReuseFreedTensorMemory();
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return fgl::experiments::Run();
}
