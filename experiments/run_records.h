// Run records (experiments/results/<key>.json): reading and writing them, a finished run's record
// from its output, the method versions they carry, and a record's numbers added to its cell.
#ifndef FGL_EXPERIMENTS_RUN_RECORDS_H_
#define FGL_EXPERIMENTS_RUN_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "experiments/proto/experiment.pb.h"
#include "experiments/proto/record.pb.h"
#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"
#include "fl/proto/federation.pb.h"

namespace fgl::experiments {

// The contents of a file; "" when it is missing or unreadable.
std::string Slurp(const std::string& path);

// A protobuf JSON file (a run's result.json, a budget timing); false when missing or unreadable,
// and the run is then redone. Run records are read with ReadRunRecord.
bool ReadJson(const std::string& path, google::protobuf::Message* message);

// The run record at `path` (<dir>/<key>.json). NotFound when there is no such file. DataLoss naming
// the file when it is empty, cut or not a record; when its checksum does not match (records
// written before checksums have none, and are read without); when it is misplaced (its key is not
// its file name, or not the key of its own spec, seed and result version); or when it holds a
// value no run can have (CheckRunRecord). Reports are made from records only, so a damaged one
// must stop them rather than leave a seed out.
absl::StatusOr<proto::RunRecord> ReadRunRecord(const std::string& path);

// A record's numbers: accuracies and accuracy curves finite and in [0, 100], losses finite, times
// finite and non-negative, byte counts and the peak memory non-negative. InvalidArgument naming
// `where` and the field.
absl::Status CheckRunRecord(const proto::RunRecord& record, const std::string& where);

// Writes `record` (checked by CheckRunRecord first: a run whose record would be refused is an
// error now, not a file that stops its table later) to `path` atomically, with its checksum: one
// line of protobuf JSON whose last member is "checksum", the FNV-1a-64 (16 hex digits) of the line
// as it reads without that member.
absl::Status WriteRunRecord(const std::string& path, const proto::RunRecord& record);

// The seed_<s> directory a one-seed run wrote under `out_dir`, or "".
std::string SeedDirectory(const std::string& out_dir);

// The method's result version as the code has it now ("fedprox@1", "fedavg@1+fedtad@1"), and as a
// record written before versions were recorded reads (every part at version 1).
std::string CurrentVersion(const std::string& method);
std::string RecordVersion(const proto::RunRecord& record, const std::string& method);

// A run's final per-client reports by name (RunResult.final_client_reports).
std::map<std::string, std::vector<double>> FinalReports(const fl::proto::RunResult& result);

// One finished run's numbers into its cell: the value the table shows, the traffic, the time.
void AddRun(const proto::Table& table, const proto::RunRecord& record, CellResult& r);

// Forgets the runs AddRun gave a cell, which then reads as `state` (not run, stale, no data); a
// cell left "not run" keeps how many seeds it had (AddRun gives one value per run).
void ClearRuns(CellResult& r, CellResult::State state);

// RoundRecord's double fields (by name) that MakeRecord leaves out of RunRecord.round_metrics:
// those with a named curve of their own (val_acc: val_curve, ...), and those deliberately not kept
// per round. Every other double field of RoundRecord is a round metric.
std::vector<std::string> RoundFieldsWithNamedCurves();
std::vector<std::string> RoundFieldsNotRecorded();
// Appends one round's metrics to record.round_metrics: every double field of `round` not named in
// `left_out`; a field with presence that the round lacks adds nothing (as test_loss_curve).
void AddRoundMetrics(const fl::proto::RoundRecord& round, const std::vector<std::string>& left_out,
                     proto::RunRecord& record);

// A run's record from its result.json and rounds.jsonl.
absl::StatusOr<proto::RunRecord> MakeRecord(const std::string& key, const proto::Experiment& resolved, uint64_t seed,
                                           fl::proto::RunResult result, const std::string& rounds_path);

// One line of protobuf JSON at `path`, written atomically (graph::io::WriteFileAtomically).
absl::Status WriteRecord(const std::string& path, const google::protobuf::Message& record);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_RUN_RECORDS_H_
