// Runs one federated experiment and prints one JSON line (a fl.proto.RunResult) per training seed.
//
//   bazel run //experiments:run -- --dataset=cora --partitioner=louvain --clients=10
//       --method=fedavg --rounds=100 --seeds=2024 --out=/tmp/run
//   bazel run //experiments:run -- --spec=my_experiment.textproto
//       --set="clients=5;eval.dropout_at_eval=true;fedtad.knn=3"
//
// Every field of the Experiment proto (experiments/proto/experiment.proto) is also a flag:
// --FIELD=VALUE (dotted for nested fields: --fedtad.knn=3, --eval.model=LOCAL) is --set
// FIELD=VALUE, applied after --spec and before --set; --seed=N is --seeds=N. Without --spec the
// experiment starts from `dataset: "cora" method: "fedavg" seeds: 2024`.
//
// With --out=DIR, each seed writes DIR/seed_<s>/ (DIR/ itself for one seed given by flags):
// rounds.jsonl (a fl.proto.RoundRecord per line), result.json and, for global evaluation,
// final_model.pb (the last broadcast), all JSON through protobuf's printer.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "experiments/peak_file.h"
#include "experiments/rounds_log.h"
#include "experiments/spec.h"
#include "fl/phase_profile.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/proto_json.h"
#include "fl/run_setup.h"
#include "fl/simulator.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "nn/cpu_kernels.h"
#include "nn/memory.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "Experiment textproto (experiments/proto/experiment.proto).");
ABSL_FLAG(std::string, set, "",
          "';'-separated overrides of Experiment fields, e.g. \"clients=5;fedtad.knn=3;seeds=7\".");
ABSL_FLAG(std::string, data_dir, "", "Dataset root; else $FGL_DATA_DIR, else ./data.");
ABSL_FLAG(std::string, cache_dir, "", "Partition cache; default ~/.cache/fgl/partitions, 'none' off.");
ABSL_FLAG(std::string, device, "cpu", "cpu or cuda[:i].");
ABSL_FLAG(int, threads, 1, "CPU threads (LibTorch and OpenBLAS).");
ABSL_FLAG(bool, strict, false, "Abort when a client fails instead of leaving it out of the round.");
ABSL_FLAG(std::string, out, "", "Directory for rounds.jsonl and result.json (created).");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "Directory for checkpoint.pb and peak_rss_bytes (must exist; several seeds: seed_<s>/ in it).");
ABSL_FLAG(int, checkpoint_every, 0, "Write a checkpoint every this many rounds; 0 never.");
ABSL_FLAG(double, checkpoint_minutes, 0,
          "Also write one after any round that ends at least this many minutes after the last (or the start); "
          "0 never.");
ABSL_FLAG(bool, profile, false,
          "Print where the process's time went, by phase (start-up, load, partition, rounds, output), to stderr "
          "as a Markdown table (fl/phase_profile.h).");
ABSL_FLAG(bool, resume, false,
          "Continue from --checkpoint_dir/checkpoint.pb if it matches this run (rounds.jsonl in --out keeps the "
          "rounds before it).");

namespace fgl::experiments {
namespace {

// The Experiment field a dotted flag name names ("fedtad.knn"), or nullptr.
const google::protobuf::FieldDescriptor* FieldAt(const std::string& path) {
  absl::StatusOr<const google::protobuf::FieldDescriptor*> field = ExperimentField(path);
  return field.ok() ? *field : nullptr;
}

// Moves every --FIELD=VALUE whose FIELD is not a flag but names an Experiment field into
// `sets`, so that absl sees only its own flags. --seed is --seeds (one seed); a bool field may
// be given alone (--eval.dropout_at_eval) or negated (--noeval.dropout_at_eval). An error names
// a field flag without a value.
absl::StatusOr<std::vector<char*>> SplitFieldFlags(int argc, char** argv, std::vector<std::string>* sets) {
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") {
      for (; i < argc; ++i) rest.push_back(argv[i]);
      break;
    }
    if (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) {
      rest.push_back(argv[i]);
      continue;
    }
    const size_t eq = arg.find('=');
    std::string name(arg.substr(0, eq));
    if (absl::FindCommandLineFlag(name) != nullptr || absl::StartsWith(name, "help") || name == "flagfile" ||
        name == "fromenv" || name == "tryfromenv" || name == "undefok") {
      rest.push_back(argv[i]);
      continue;
    }
    bool negated = false;
    if (name == "seed") name = "seeds";
    if (FieldAt(name) == nullptr && absl::StartsWith(name, "no") && FieldAt(name.substr(2)) != nullptr) {
      name = name.substr(2);
      negated = true;
    }
    const google::protobuf::FieldDescriptor* field = FieldAt(name);
    if (field == nullptr) {
      rest.push_back(argv[i]);  // absl reports the unknown flag
      continue;
    }
    const bool is_bool = field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL;
    if (eq == absl::string_view::npos) {
      if (!is_bool) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value: --", name, "=VALUE"));
      }
      sets->push_back(absl::StrCat(name, negated ? "=false" : "=true"));
    } else {
      if (negated) return absl::InvalidArgumentError(absl::StrCat("--no", name, " takes no value"));
      // An empty value would leave the field at its default (ApplySet refuses it too).
      if (eq + 1 == arg.size()) return absl::InvalidArgumentError(absl::StrCat("--", name, "= has an empty value"));
      sets->push_back(absl::StrCat(name, "=", arg.substr(eq + 1)));
    }
  }
  return rest;
}

// Flags that shape how a run executes, not what it computes.
void ApplyRuntimeFlags(fl::FederationOptions& o) {
  o.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  o.device = absl::GetFlag(FLAGS_device);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.strict = absl::GetFlag(FLAGS_strict);
  o.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  o.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  o.checkpoint_minutes = absl::GetFlag(FLAGS_checkpoint_minutes);
  o.resume = absl::GetFlag(FLAGS_resume);
}

// The experiment: --spec (or the flags' base), then field flags, then --set; resolved.
absl::StatusOr<proto::Experiment> LoadResolved(const std::vector<std::string>& field_sets) {
  const std::string spec_path = absl::GetFlag(FLAGS_spec);
  proto::Experiment e;
  if (spec_path.empty()) {
    e.set_dataset("cora");
    e.set_method("fedavg");
    e.add_seeds(2024);
  } else {
    FGL_ASSIGN_OR_RETURN(e, LoadExperiment(spec_path));
  }
  std::vector<std::string> sets = field_sets;
  for (absl::string_view a : absl::StrSplit(absl::GetFlag(FLAGS_set), ';', absl::SkipEmpty())) {
    sets.emplace_back(a);
  }
  for (const std::string& a : sets) FGL_RETURN_IF_ERROR(ApplySet(a, &e));
  if (!absl::GetFlag(FLAGS_data_dir).empty()) e.set_data_dir(absl::GetFlag(FLAGS_data_dir));
  FGL_ASSIGN_OR_RETURN(proto::Experiment resolved, Resolve(e, spec_path.empty() ? "flags" : spec_path));
  return resolved;
}

// The largest resident set this process has had, in bytes (Linux reports KiB).
int64_t PeakResidentBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return int64_t{usage.ru_maxrss} * 1024;
}

// One run: writes DIR/rounds.jsonl (rounds_log.h: a resumed run keeps the interrupted one's
// earlier rounds), DIR/result.json and DIR/final_model.pb when `out` is set. A write that fails (a
// full disk) fails the run, naming the file.
absl::StatusOr<fl::proto::RunResult> RunOne(const fl::ResolvedOptions& resolved, const std::string& out) {
  const fl::FederationOptions& o = *resolved;
  const nn::LargeTensorCacheStats cache_at_start = nn::GetLargeTensorCacheStats();
  const bool terminal = isatty(2);
  const auto start = std::chrono::steady_clock::now();
  const bool resuming = o.resume && !o.checkpoint_dir.empty() && graph::io::FileExists(o.checkpoint_dir + "/checkpoint.pb");
  if (!out.empty()) FGL_RETURN_IF_ERROR(graph::io::MakeDirs(out));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<RoundsLog> rounds_log,
                       RoundsLog::Open(out.empty() ? "" : out + "/rounds.jsonl", resuming));
  // Rewritten after every round, so a process killed after its last checkpoint still counts.
  const std::string peak_path = o.checkpoint_dir.empty() ? "" : PeakFilePath(o.checkpoint_dir);
  const int64_t earlier_peak = resuming ? ReadPeakFile(peak_path) : 0;
  const int rounds = o.spec.rounds();
  absl::StatusOr<fl::proto::FederationResult> r = fl::RunFederation(resolved, [&](const fl::proto::RoundRecord& rec) {
    rounds_log->Add(rec);
    if (!peak_path.empty()) WritePeakFile(peak_path, std::max(earlier_peak, PeakResidentBytes()));
    if (terminal) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const int done = rec.round() - rounds_log->first_round() + 1;
      std::cerr << absl::StrFormat("\rround %d/%d  val %.2f  test %.2f  ETA %.0fs   ", rec.round(), rounds,
                                   rec.val_acc(), rec.test_acc(), elapsed / done * (rounds - rec.round()))
                << (rec.round() == rounds ? "\n" : "") << std::flush;
    }
  });
  if (!r.ok()) return r.status();
  FGL_RETURN_IF_ERROR(rounds_log->Finish(r->rounds()));
  if (resuming) {
    const int from = rounds_log->first_round() > 0 ? rounds_log->first_round() : r->rounds_size() + 1;
    LOG(INFO) << "resumed at round " << from << "; the earlier processes' rounds took " << r->resumed_s() << " s";
  }
  const nn::LargeTensorCacheStats cache = nn::GetLargeTensorCacheStats();
  LOG(INFO) << "large tensor blocks this run: " << cache.hits - cache_at_start.hits << " reused, "
            << cache.misses - cache_at_start.misses << " fresh, " << cache.dropped - cache_at_start.dropped
            << " given back over the cap; " << (cache.cached_bytes >> 20) << " MB held at the end";
  const fl::proto::RunResult& result = r->result();
  fl::ScopedPhase output("output");
  if (!out.empty()) {
    FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(out + "/result.json", fl::ToJsonLine(result) + "\n"));
    // The final global model as broadcast: a transport run (//fl:server) must match it bit for bit.
    if (!r->final_global().empty()) {
      FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(out + "/final_model.pb", r->final_global()));
    }
  }
  return result;
}

absl::Status Run(const std::vector<std::string>& field_sets) {
  FGL_ASSIGN_OR_RETURN(const proto::Experiment resolved, LoadResolved(field_sets));
  const std::string out = absl::GetFlag(FLAGS_out);
  // A spec's seeds each get a directory; one seed from flags writes to --out itself.
  const bool per_seed_dirs = !absl::GetFlag(FLAGS_spec).empty() || resolved.seeds_size() > 1;
  for (uint64_t seed : resolved.seeds()) {
    fl::FederationOptions o = ToFederationOptions(resolved, seed);
    ApplyRuntimeFlags(o);
    if (!o.checkpoint_dir.empty() && resolved.seeds_size() > 1) {  // each seed's run its own checkpoint
      o.checkpoint_dir = absl::StrCat(o.checkpoint_dir, "/seed_", seed);
      FGL_RETURN_IF_ERROR(graph::io::MakeDirs(o.checkpoint_dir));
    }
    // The run's one resolution: fl takes the options as they are from here on.
    FGL_ASSIGN_OR_RETURN(const fl::ResolvedOptions resolved_options, fl::ResolveOptions(std::move(o)));
    FGL_ASSIGN_OR_RETURN(const fl::proto::RunResult result,
                         RunOne(resolved_options, out.empty() || !per_seed_dirs ? out : absl::StrCat(out, "/seed_", seed)));
    std::cout << fl::ToJsonLine(result) << std::endl;
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace fgl::experiments

int main(int argc, char** argv) {
  fgl::nn::PinCpuKernels(argv);
  const fgl::nn::StartupSeconds startup = fgl::nn::SecondsSinceStart();
  const auto main_start = std::chrono::steady_clock::now();
  fgl::nn::ReuseFreedTensorMemory();
  std::vector<std::string> field_sets;
  absl::StatusOr<std::vector<char*>> args = fgl::experiments::SplitFieldFlags(argc, argv, &field_sets);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  if (!args.ok()) {
    LOG(ERROR) << args.status().message();
    return 1;
  }
  const std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(args->size()), args->data());
  if (positional.size() > 1) {
    LOG(ERROR) << "unexpected argument '" << positional[1] << "' (options are --NAME=VALUE)";
    return 1;
  }
  if (absl::GetFlag(FLAGS_profile)) {
    fgl::fl::EnablePhaseProfile();
    fgl::fl::AddPhaseSeconds("start-up: load the binary and its libraries", startup.before_reexec);
    if (startup.after_reexec > 0) {
      fgl::fl::AddPhaseSeconds("start-up: again, re-executed with pinned kernels", startup.after_reexec);
    }
    fgl::fl::AddPhaseSeconds("flags", std::chrono::duration<double>(std::chrono::steady_clock::now() - main_start).count());
  }
  const absl::Status status = fgl::experiments::Run(field_sets);
  if (absl::GetFlag(FLAGS_profile)) {
    const double wall = startup.before_reexec + startup.after_reexec +
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - main_start).count();
    std::cerr << "\nwhere the time went (wall " << absl::StrFormat("%.3f", wall)
              << " s since the process started; a phase on several threads adds their seconds):\n"
              << fgl::fl::PhaseTable(wall);
  }
  if (!status.ok()) {
    LOG(ERROR) << status.message();
    return status.code() == absl::StatusCode::kUnimplemented ? 2 : 1;
  }
  return 0;
}
