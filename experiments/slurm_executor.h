// The table runner's Slurm executor (--executor=slurm, issue #66): a planned table's missing runs
// as job arrays, one per memory and time class (a Slurm array has one --mem and one --time for all
// its tasks), each task the //experiments:run process the local queue (run_queue.h) would start,
// writing into a directory on shared storage; then waiting for the arrays (squeue/sacct) and turning
// the tasks' outputs into the same run records.
//
// <slurm_dir>/runs/<key>/     one run: spec.textproto, record_path, commit, out/, ckpt/, node, cpuinfo,
//                             submitted ("<job id> <task> <log>"); removed once its record is written
// <slurm_dir>/arrays/<name>/  one array: run.sbatch, task_<i>.log, job_id; <name> is
//                             <table>-<time>-<pid>-<mem>M-<time>min, the array's --mem and --time
#ifndef FGL_EXPERIMENTS_SLURM_EXECUTOR_H_
#define FGL_EXPERIMENTS_SLURM_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "experiments/proto/table.pb.h"
#include "experiments/run_queue.h"
#include "experiments/table_plan.h"

namespace fgl::experiments {

struct SlurmOptions {
  std::string slurm_dir;  // on storage the compute nodes share (absolute)
  std::string partition, account, qos;
  std::vector<std::string> extra_args;  // passed to sbatch as they are
  int max_parallel = 0;                 // each array's %limit (so K arrays run up to K x this); 0: none
  double poll_seconds = 30;             // between squeue/sacct polls
  bool no_wait = false;                 // submit and return; a later invocation collects
  double default_mem_gb = 4;            // --mem of a configuration with no recorded peak
  double default_time_minutes = 24 * 60;  // --time of a configuration with no recorded wall time
  std::string job_name = "fgl";
};

// sbatch's --mem in MiB for a run expected to peak at `peak_bytes` (0: unknown): the peak plus a
// quarter plus 512 MiB, else the default.
int64_t SlurmMemoryMib(int64_t peak_bytes, double default_mem_gb);
// sbatch's --time in minutes for a run expected to take `wall_s` (nullopt: unknown): 1.5× plus 10
// minutes, else the default.
int64_t SlurmTimeMinutes(std::optional<double> wall_s, double default_time_minutes);

// One run's resources: SlurmMemoryMib and SlurmTimeMinutes (capped by --stop_by).
struct TaskRequest {
  int64_t mem_mib = 0, time_minutes = 0;
};
// The runs one array submits (indices into the requests, in their order) and what it asks of each:
// the largest --mem and --time among them.
struct ArrayGroup {
  int64_t mem_mib = 0, time_minutes = 0;
  std::vector<size_t> tasks;
};
// Memory classes are powers of two GiB (<= 1, 2, 4, 8 ... GiB), time classes powers of four hours
// (<= 1, 4, 16, 64 ... h): a task of an array asks less than twice the memory and four times the
// time it needs (bar the smallest classes), and a table makes a handful of arrays, not one per run.
inline constexpr int64_t kMemoryClassMib = 1024;
inline constexpr int64_t kTimeClassMinutes = 60;
// `requests` grouped by memory class, then time class: one group per pair in use, the smallest
// memory (then time) first.
std::vector<ArrayGroup> GroupByResources(const std::vector<TaskRequest>& requests);

// The batch script of one array: `run_dirs[i]` is task i's run directory. The #SBATCH lines carry
// the array, one CPU, memory, time, log path, partition, account, QOS and --deadline (stop_by);
// `run_args` follow `run_binary --spec=DIR/spec.textproto --threads=1 --out=DIR/out`.
struct ArrayScript {
  std::string job_name, log_pattern, partition, account, qos;
  int64_t mem_mib = 0, time_minutes = 0;
  int max_parallel = 0;
  absl::Time deadline = absl::InfiniteFuture();
  std::string run_binary;
  std::vector<std::string> run_args;  // after --out
  std::vector<std::string> run_dirs;
};
std::string BatchScript(const ArrayScript& a);

// Array task states from `squeue -h -r -o "%i %T"` or `sacct -n -P -X -o JobID,State` output for job
// `job_id` (lines "<id>_<task> STATE" or "<id>_<task>|STATE"; "<id>_[a-b%p]" ranges expanded;
// "CANCELLED by 0" read as CANCELLED).
std::map<int, std::string> ParseTaskStates(const std::string& text, const std::string& job_id);

// Turns every finished run under `slurm_dir`/runs (out/seed_<s>/result.json) that has no record yet
// into its record (MakeRecord, as the local queue does; the commit is the submitting runner's, the
// machine the node's), and removes its run directory. Returns how many records it wrote.
absl::StatusOr<int> CollectSlurmOutputs(const std::string& slurm_dir);

// Submits `plan.pending` as one array per resource class (GroupByResources; runs already submitted
// and still queued are waited for, not submitted again; --stop_by drops runs that would not end in
// time and sets --deadline), then, unless `slurm.no_wait`, waits for all of them with one progress
// line on stderr and fills the cells from the records (CollectSlurmOutputs). Failed tasks are logged
// with their Slurm state and log, and their cells read "RUN FAILED"; with no_wait the submitted runs'
// cells read "not run". When a later sbatch fails, the arrays already submitted stay queued (their
// runs' `submitted` files written), and the next call follows them.
absl::StatusOr<QueueResult> RunPendingOnSlurm(const proto::Table& table, const QueueOptions& options,
                                              const SlurmOptions& slurm, TablePlan& plan);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_SLURM_EXECUTOR_H_
