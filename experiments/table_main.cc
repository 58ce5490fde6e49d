// Regenerates one paper table: runs every missing cell (all seeds) through //experiments:run in
// parallel subprocesses, caches each run's result by a hash of its resolved spec, seed and result
// version, and writes experiments/reports/<paper>/<table>.{md,csv,svg}.
//
//   bazel run //experiments:fedtad_table2 [-- --quick]
//
// Flags, then the steps: plan the table from its records (table_plan.h), print its budget
// (table_budget.h) or make the missing runs (run_queue.h), and write the report (table_report.h).
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "experiments/table_budget.h"
#include "experiments/run_queue.h"
#include "experiments/runner_environment.h"
#include "experiments/slurm_executor.h"
#include "experiments/spec.h"
#include "experiments/table_plan.h"
#include "experiments/table_report.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/io/file.h"
#include "nn/cpu_kernels.h"

ABSL_FLAG(std::string, table, "", "Table textproto (experiments/<paper>/<table>.textproto).");
ABSL_FLAG(bool, quick, false, "Smoke test: at most 3 rounds and the first seed of every cell.");
ABSL_FLAG(std::vector<std::string>, only_columns, {},
          "Run only these column keys; other cells are filled from their records alone (as --cached_only).");
ABSL_FLAG(std::vector<std::string>, only_rows, {}, "Run only these row keys (as --only_columns).");
ABSL_FLAG(bool, cached_only, false,
          "Run nothing: report the cells whose every seed is in the result cache, the others as "
          "'not run in this report'.");
ABSL_FLAG(bool, budget, false,
          "Run nothing and write no report: print, per row, the CPU-hours of the recorded runs and an "
          "estimate for the missing ones (the mean wall time of recorded runs of the same method, "
          "dataset and client count, in any table; 'unknown' where there is none).");
ABSL_FLAG(int, budget_time_rounds, 0,
          "With --budget: time this many rounds (first seed, one run at a time) of each configuration "
          "that has no recorded run, and scale them to the configuration's rounds; 0 = do not time.");
ABSL_FLAG(int, jobs, 0, "Runs in parallel (each with one thread); 0 = the core count.");
ABSL_FLAG(double, memory_gb, 0,
          "Memory the runs of this runner may hold at once (GB), by their configurations' recorded "
          "peaks; 0 = 90% of the machine's (MemTotal). A run is also held back while MemAvailable, less "
          "what this runner's runs have yet to grow to their peaks, is below its peak (this sees the "
          "memory other processes, e.g. another runner's runs, hold now, not what they will grow to).");
ABSL_FLAG(bool, run_partition_spread, true,
          "Also run the partition-spread runs (further partition seeds of the spread rows); false: "
          "fill them from their records only, so the table's own cells come first.");
ABSL_FLAG(std::string, budget_runs_out, "",
          "With --budget: also write every run the table uses to this file, one per line: "
          "\"recorded<TAB>key<TAB>wall seconds\" or \"missing<TAB>key<TAB>estimated seconds (-1: unknown)<TAB>"
          "records|timed|unknown\", so "
          "that totals over several tables count a run they share once (//experiments:budget).");
ABSL_FLAG(bool, budget_summary, false,
          "With --budget: print only the table's total as one Markdown row (the //experiments:budget "
          "table).");
ABSL_FLAG(std::string, data_dir, "", "Dataset root; else $FGL_DATA_DIR, else ./data.");
ABSL_FLAG(std::string, cache_dir, "",
          "Result cache; default $FGL_CACHE_DIR/results or ~/.cache/fgl/results.");
ABSL_FLAG(std::string, results_dir, "",
          "Run records (one JSON line per run, what reports are made from); default "
          "<workspace>/experiments/results (quick: <cache>/quick_records).");
ABSL_FLAG(std::string, report_dir, "",
          "Where reports go; default <workspace>/experiments/reports (quick: reports-quick).");
ABSL_FLAG(std::string, run_binary, "experiments/run", "The //experiments:run binary.");
ABSL_FLAG(std::string, code_commit, "",
          "The commit --run_binary was built from, recorded in each new run's record; default the workspace's "
          "HEAD (+dirty), right when the binary is built from the workspace, not for a copy built earlier.");
ABSL_FLAG(double, checkpoint_minutes, 10,
          "Checkpoint each run after the first round that ends this long after its last checkpoint (or its "
          "start), in <cache>/<run>.ckpt: a runner stopped and started again resumes an interrupted run "
          "from its last checkpoint, with the same numbers. 0 = never.");
ABSL_FLAG(absl::Time, stop_by, absl::InfiniteFuture(),
          "Start no run that is not expected to end by this time (RFC 3339, e.g. "
          "2026-11-29T06:10:00Z): its configuration's mean recorded wall time (or committed timing) "
          "must fit in what is left; runs of unknown length are not started. The cells of runs not "
          "started read 'not run'; a later invocation runs them.");
ABSL_FLAG(int, checkpoint_rounds, 0,
          "Also checkpoint every this many rounds; 0 = by --checkpoint_minutes alone.");
ABSL_FLAG(std::string, executor, "local",
          "local: the runs as processes here (--jobs, --memory_gb); slurm: Slurm job arrays (sbatch), one per "
          "memory and time class, each task one run writing into --slurm_dir, then wait for them (squeue/sacct) "
          "and record the outputs.");
ABSL_FLAG(std::string, slurm_dir, "",
          "--executor=slurm: the runs' specs, outputs, checkpoints, batch scripts and logs; must be on storage "
          "the compute nodes share (as must --run_binary and the data root). Default <cache_dir>/slurm.");
ABSL_FLAG(std::string, slurm_partition, "", "--executor=slurm: sbatch --partition (empty: the cluster's default).");
ABSL_FLAG(std::string, slurm_account, "", "--executor=slurm: sbatch --account.");
ABSL_FLAG(std::string, slurm_qos, "", "--executor=slurm: sbatch --qos.");
ABSL_FLAG(std::string, slurm_extra_args, "",
          "--executor=slurm: further sbatch arguments, separated by spaces (e.g. \"--constraint=avx2 --requeue\").");
ABSL_FLAG(int, slurm_max_parallel, 0,
          "--executor=slurm: at most this many tasks of each array at once (--array=0-N%P); 0 = no limit.");
ABSL_FLAG(double, slurm_poll_seconds, 30, "--executor=slurm: seconds between squeue/sacct polls.");
ABSL_FLAG(double, slurm_default_mem_gb, 4,
          "--executor=slurm: --mem of a run whose configuration has no recorded peak (else the peak + 25% + 512 MiB).");
ABSL_FLAG(double, slurm_default_time_minutes, 24 * 60,
          "--executor=slurm: --time of a run whose configuration has no recorded or timed wall time (else 1.5x + 10 min).");
ABSL_FLAG(bool, no_wait, false,
          "--executor=slurm: submit and return (the submitted runs' cells read 'not run'); a later invocation with "
          "--executor=slurm (e.g. --cached_only) records the finished runs.");

namespace fgl::experiments {
namespace {

int Run() {
  const std::string table_path = absl::GetFlag(FLAGS_table);
  absl::StatusOr<proto::Table> table = LoadTable(table_path);
  if (!table.ok()) {
    LOG(ERROR) << table.status();
    return 1;
  }
  const bool quick = absl::GetFlag(FLAGS_quick);
  const std::string data_dir = Absolute(graph::ResolveDataDir(absl::GetFlag(FLAGS_data_dir)));
  std::string cache = absl::GetFlag(FLAGS_cache_dir);
  if (cache.empty()) cache = DefaultCacheDir();
  if (absl::Status s = graph::io::MakeDirs(cache); !s.ok()) {
    LOG(ERROR) << s;
    return 1;
  }
  std::string records = absl::GetFlag(FLAGS_results_dir);
  if (records.empty()) {
    records = quick ? absl::StrCat(cache, "/quick_records") : absl::StrCat(Workspace(), "/experiments/results");
  }
  if (absl::Status s = graph::io::MakeDirs(records); !s.ok()) {
    LOG(ERROR) << s;
    return 1;
  }
  const std::string run_binary = Absolute(absl::GetFlag(FLAGS_run_binary));
  // experiments/<paper>/<table>.textproto -> reports/<paper>/<table>.*
  const size_t slash = table_path.find_last_of('/');
  const std::string stem = table_path.substr(slash + 1, table_path.rfind('.') - slash - 1);
  const std::string parent = table_path.substr(0, slash);
  const std::string paper = parent.substr(parent.find_last_of('/') + 1);
  std::string report_dir = absl::GetFlag(FLAGS_report_dir);
  if (report_dir.empty()) {
    report_dir = absl::StrCat(Workspace(), "/experiments/", quick ? "reports-quick" : "reports");
  }
  report_dir = absl::StrCat(report_dir, "/", paper);
  if (absl::Status s = graph::io::MakeDirs(report_dir); !s.ok()) {
    LOG(ERROR) << s;
    return 1;
  }

  // The commit and machine that produce new runs (recorded in each run's record).
  const std::string commit = CodeCommit(absl::GetFlag(FLAGS_code_commit));
  const std::string machine = MachineDescription();

  // Slurm: runs finished since an earlier submission become records before the plan reads them.
  const std::string executor = absl::GetFlag(FLAGS_executor);
  if (executor != "local" && executor != "slurm") {
    LOG(ERROR) << "--executor=" << executor << ": expected local or slurm";
    return 1;
  }
  SlurmOptions slurm;
  if (executor == "slurm") {
    slurm.slurm_dir = absl::GetFlag(FLAGS_slurm_dir).empty() ? absl::StrCat(Absolute(cache), "/slurm")
                                                              : Absolute(absl::GetFlag(FLAGS_slurm_dir));
    slurm.partition = absl::GetFlag(FLAGS_slurm_partition);
    slurm.account = absl::GetFlag(FLAGS_slurm_account);
    slurm.qos = absl::GetFlag(FLAGS_slurm_qos);
    slurm.extra_args = absl::StrSplit(absl::GetFlag(FLAGS_slurm_extra_args), ' ', absl::SkipEmpty());
    slurm.max_parallel = absl::GetFlag(FLAGS_slurm_max_parallel);
    slurm.poll_seconds = absl::GetFlag(FLAGS_slurm_poll_seconds);
    slurm.default_mem_gb = absl::GetFlag(FLAGS_slurm_default_mem_gb);
    slurm.default_time_minutes = absl::GetFlag(FLAGS_slurm_default_time_minutes);
    slurm.no_wait = absl::GetFlag(FLAGS_no_wait);
    slurm.job_name = absl::StrCat("fgl-", paper, "-", stem);
    absl::StatusOr<int> collected = CollectSlurmOutputs(slurm.slurm_dir);
    if (!collected.ok()) {
      LOG(ERROR) << collected.status();
      return 1;
    }
    if (*collected > 0) LOG(INFO) << "recorded " << *collected << " runs finished on Slurm";
  }

  TablePlan plan;
  PlanOptions plan_options;
  plan_options.table_path = table_path;
  plan_options.data_dir = data_dir;
  plan_options.records = records;
  plan_options.cache = cache;
  plan_options.quick = quick;
  plan_options.cached_only = absl::GetFlag(FLAGS_cached_only);
  plan_options.only_columns = absl::GetFlag(FLAGS_only_columns);
  plan_options.only_rows = absl::GetFlag(FLAGS_only_rows);
  plan_options.run_partition_spread = absl::GetFlag(FLAGS_run_partition_spread);
  if (absl::Status s = PlanTable(*table, plan_options, plan); !s.ok()) {
    LOG(ERROR) << s;
    return 1;
  }

  if (absl::GetFlag(FLAGS_budget)) {
    BudgetOptions budget_options;
    budget_options.time_rounds = absl::GetFlag(FLAGS_budget_time_rounds);
    budget_options.runs_out = absl::GetFlag(FLAGS_budget_runs_out);
    budget_options.summary = absl::GetFlag(FLAGS_budget_summary);
    budget_options.run_binary = run_binary;
    budget_options.cache = cache;
    budget_options.commit = commit;
    budget_options.machine = machine;
    absl::StatusOr<std::string> budget = Budget(*table, absl::StrCat(paper, "/", stem), plan, records, budget_options);
    if (!budget.ok()) {
      LOG(ERROR) << budget.status();
      return 1;
    }
    std::cout << *budget;
    return 0;
  }

  QueueOptions queue_options;
  queue_options.jobs = absl::GetFlag(FLAGS_jobs);
  queue_options.memory_gb = absl::GetFlag(FLAGS_memory_gb);
  queue_options.stop_by = absl::GetFlag(FLAGS_stop_by);
  queue_options.checkpoint_rounds = absl::GetFlag(FLAGS_checkpoint_rounds);
  queue_options.checkpoint_minutes = absl::GetFlag(FLAGS_checkpoint_minutes);
  queue_options.records = records;
  queue_options.run_binary = run_binary;
  queue_options.commit = commit;
  queue_options.machine = machine;
  const absl::StatusOr<QueueResult> ran = executor == "slurm" ? RunPendingOnSlurm(*table, queue_options, slurm, plan)
                                                              : RunPending(*table, queue_options, plan);
  if (!ran.ok()) return 1;  // RunPending logged why

  const absl::StatusOr<bool> plotted = WriteTableReport(*table, plan, report_dir, stem);
  if (!plotted.ok()) {
    LOG(ERROR) << plotted.status();
    return 1;
  }
  std::cout << "wrote " << report_dir << "/" << stem << ".{md,csv" << (*plotted ? ",svg" : "") << "}"
            << " (" << ran->total << " runs, " << ran->failed << " failed)" << std::endl;
  return ran->failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace fgl::experiments

int main(int argc, char** argv) {
  // The runs it starts inherit the pinned kernels (and record them with the machine).
  fgl::nn::PinCpuKernels(argv);
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return fgl::experiments::Run();
}
