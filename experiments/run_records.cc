#include "experiments/run_records.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "experiments/spec.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/proto_json.h"
#include "fl/registry.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "graph/random.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::experiments {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ReadJson(const std::string& path, google::protobuf::Message* message) {
  const std::string json = Slurp(path);
  if (json.empty()) return false;
  if (absl::Status s = fl::FromJson(json, message, path); !s.ok()) {
    LOG(WARNING) << s;
    return false;
  }
  return true;
}

std::string SeedDirectory(const std::string& out_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out_dir, ec)) {
    if (entry.is_directory() && absl::StartsWith(entry.path().filename().string(), "seed_")) {
      return entry.path().string();
    }
  }
  return "";
}

std::string CurrentVersion(const std::string& method) {
  absl::StatusOr<fl::MethodFactories> m = fl::FindMethod(method);
  return m.ok() ? m->version : "";
}
std::string RecordVersion(const proto::RunRecord& record, const std::string& method) {
  if (!record.method_version().empty()) return record.method_version();
  std::vector<std::string> parts = absl::StrSplit(method, '+');
  for (std::string& p : parts) p += "@1";
  return absl::StrJoin(parts, "+");
}

std::map<std::string, std::vector<double>> FinalReports(const fl::proto::RunResult& result) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, values] : result.final_client_reports()) {
    out[name].assign(values.values().begin(), values.values().end());
  }
  return out;
}

void AddRun(const proto::Table& table, const proto::RunRecord& record, CellResult& r) {
  constexpr double kMiB = 1 << 20;
  const fl::proto::RunResult& result = record.result();
  // Accuracies are percent in the records; a table that compares with printed fractions shows
  // fractions.
  const double accuracy_unit = table.fraction() ? 0.01 : 1.0;
  double value = accuracy_unit * result.test_acc();
  if (r.value == proto::Table::UPLOADED_MIB) value = static_cast<double>(result.bytes_up()) / kMiB;
  if (r.value == proto::Table::GLOBAL_TEST_ACCURACY) value = accuracy_unit * result.global_test_acc();
  if (r.value == proto::Table::TRAINING_MINUTES) value = result.train_s() / 60;
  if (r.value == proto::Table::UPLOADED_TENSOR_MIB) {
    const std::map<std::string, int64_t> by_group(result.uploaded_tensor_bytes_by_group().begin(),
                                                  result.uploaded_tensor_bytes_by_group().end());
    value = static_cast<double>(SelectedTensorBytes(by_group, r.tensor_groups)) / kMiB;
  }
  if (r.value == proto::Table::CLIENT_REPORT) value = ClientReportValue(FinalReports(result), r.report, r.client);
  if (r.value == proto::Table::LAST_ROUND_TIME_SHARE) {
    const auto& s = record.seconds_curve();
    const double total = std::accumulate(s.begin(), s.end(), 0.0);
    value = total > 0 ? 100.0 * s[s.size() - 1] / total : 0.0;
  }
  r.values.push_back(value);
  r.seeds.push_back(record.seed());
  const auto& curve = r.value == proto::Table::GLOBAL_TEST_ACCURACY ? record.global_test_curve() : record.test_curve();
  if (r.curve_sum.size() < static_cast<size_t>(curve.size())) r.curve_sum.resize(curve.size(), 0.0);
  for (int i = 0; i < curve.size(); ++i) r.curve_sum[i] += curve[i];
  ++r.curve_runs;
  r.traffic_mib.push_back(static_cast<double>(result.bytes_up() + result.bytes_down()) / kMiB);
  r.rounds_run.push_back(record.test_curve_size());
  r.run_seconds += result.wall_s();
  r.recorded_runs.emplace_back(record.key(), result.wall_s());
  r.peak_rss_bytes = std::max(r.peak_rss_bytes, record.peak_rss_bytes());
}

void ClearRuns(CellResult& r, CellResult::State state) {
  r.seeds_recorded = state == CellResult::State::kNotRun ? static_cast<int>(r.values.size()) : 0;
  r.state = state;
  r.values.clear();
  r.seeds.clear();
  r.curve_sum.clear();
  r.curve_runs = 0;
  r.traffic_mib.clear();
  r.rounds_run.clear();
  r.run_seconds = 0;
  r.recorded_runs.clear();
  r.peak_rss_bytes = 0;
}

std::vector<std::string> RoundFieldsWithNamedCurves() {
  return {"val_acc", "test_acc", "global_test_acc", "train_loss", "seconds", "test_loss"};
}

std::vector<std::string> RoundFieldsNotRecorded() {
  // The reported round's value is in RunResult; records never kept its curve.
  return {"client_mean_test_acc"};
}

void AddRoundMetrics(const fl::proto::RoundRecord& round, const std::vector<std::string>& left_out,
                     proto::RunRecord& record) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* d = fl::proto::RoundRecord::descriptor();
  const google::protobuf::Reflection& reflection = *round.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated() || f->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE) continue;
    if (std::find(left_out.begin(), left_out.end(), f->name()) != left_out.end()) continue;
    if (f->has_presence() && !reflection.HasField(round, f)) continue;
    (*record.mutable_round_metrics()->mutable_curves())[f->name()].add_values(reflection.GetDouble(round, f));
  }
}

absl::StatusOr<proto::RunRecord> MakeRecord(const std::string& key, const proto::Experiment& resolved, uint64_t seed,
                                           fl::proto::RunResult result, const std::string& rounds_path) {
  proto::RunRecord record;
  record.set_key(key);
  record.set_result_version(kResultVersion);
  record.set_spec(KeyedSpecText(resolved));
  record.set_seed(seed);
  record.set_method_version(CurrentVersion(resolved.method()));
  result.clear_spec();
  *record.mutable_result() = std::move(result);
  std::vector<std::string> left_out = RoundFieldsWithNamedCurves();
  for (std::string& name : RoundFieldsNotRecorded()) left_out.push_back(std::move(name));
  std::istringstream lines(Slurp(rounds_path));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    fl::proto::RoundRecord round;
    FGL_RETURN_IF_ERROR(fl::FromJson(line, &round, rounds_path));
    if (round.round() != record.test_curve_size() + 1) {
      return absl::DataLossError(absl::StrCat(rounds_path, ": round ", round.round(), " out of order"));
    }
    record.add_val_curve(round.val_acc());
    record.add_test_curve(round.test_acc());
    if (round.has_global_test_acc()) record.add_global_test_curve(round.global_test_acc());
    if (round.has_train_loss()) record.add_loss_curve(round.train_loss());
    record.add_seconds_curve(round.seconds());
    if (resolved.eval().has_early_stop() && round.has_test_loss()) record.add_test_loss_curve(round.test_loss());
    AddRoundMetrics(round, left_out, record);
  }
  return record;
}

absl::Status WriteRecord(const std::string& path, const google::protobuf::Message& record) {
  return graph::io::WriteFileAtomically(path, fl::ToJsonLine(record) + "\n");
}

namespace {

// The member a record's line ends with: ,"checksum":"<16 hex digits>"}
constexpr absl::string_view kChecksumPrefix = ",\"checksum\":\"";
constexpr size_t kChecksumSuffixSize = kChecksumPrefix.size() + 16 + 2;

std::string Checksum(absl::string_view line) {
  return absl::StrFormat("%016x", graph::Fnv1a64(line.data(), line.size()));
}

absl::Status Refuse(const std::string& where, absl::string_view why) {
  return absl::DataLossError(absl::StrCat(where, ": ", why));
}

// An accuracy in percent.
absl::Status CheckPercent(const std::string& where, absl::string_view field, double value) {
  if (std::isfinite(value) && value >= 0 && value <= 100) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", field, " = ", value, " is not an accuracy in [0, 100]"));
}
absl::Status CheckFinite(const std::string& where, absl::string_view field, double value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", field, " = ", value, " is not finite"));
}
absl::Status CheckTime(const std::string& where, absl::string_view field, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", field, " = ", value, " is not a time (finite, >= 0)"));
}
absl::Status CheckCount(const std::string& where, absl::string_view field, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", field, " = ", value, " is negative"));
}

}  // namespace

absl::Status CheckRunRecord(const proto::RunRecord& record, const std::string& where) {
  const fl::proto::RunResult& r = record.result();
  FGL_RETURN_IF_ERROR(CheckPercent(where, "result.test_acc", r.test_acc()));
  FGL_RETURN_IF_ERROR(CheckPercent(where, "result.val_acc", r.val_acc()));
  FGL_RETURN_IF_ERROR(CheckPercent(where, "result.client_mean_test_acc", r.client_mean_test_acc()));
  if (r.has_global_test_acc()) FGL_RETURN_IF_ERROR(CheckPercent(where, "result.global_test_acc", r.global_test_acc()));
  const std::pair<absl::string_view, const google::protobuf::RepeatedField<double>*> curves[] = {
      {"val_curve", &record.val_curve()}, {"test_curve", &record.test_curve()},
      {"global_test_curve", &record.global_test_curve()}};
  for (const auto& [name, curve] : curves) {
    for (int i = 0; i < curve->size(); ++i) {
      FGL_RETURN_IF_ERROR(CheckPercent(where, absl::StrCat(name, "[", i, "]"), curve->Get(i)));
    }
  }
  for (int i = 0; i < record.loss_curve_size(); ++i) {
    FGL_RETURN_IF_ERROR(CheckFinite(where, absl::StrCat("loss_curve[", i, "]"), record.loss_curve(i)));
  }
  for (int i = 0; i < record.test_loss_curve_size(); ++i) {
    FGL_RETURN_IF_ERROR(CheckFinite(where, absl::StrCat("test_loss_curve[", i, "]"), record.test_loss_curve(i)));
  }
  for (const auto& [name, curve] : record.round_metrics().curves()) {
    for (int i = 0; i < curve.values_size(); ++i) {
      FGL_RETURN_IF_ERROR(CheckFinite(where, absl::StrCat("round_metrics[", name, "][", i, "]"), curve.values(i)));
    }
  }
  for (int i = 0; i < record.seconds_curve_size(); ++i) {
    FGL_RETURN_IF_ERROR(CheckTime(where, absl::StrCat("seconds_curve[", i, "]"), record.seconds_curve(i)));
  }
  FGL_RETURN_IF_ERROR(CheckTime(where, "result.wall_s", r.wall_s()));
  FGL_RETURN_IF_ERROR(CheckTime(where, "result.train_s", r.train_s()));
  FGL_RETURN_IF_ERROR(CheckCount(where, "result.bytes_up", r.bytes_up()));
  FGL_RETURN_IF_ERROR(CheckCount(where, "result.bytes_down", r.bytes_down()));
  FGL_RETURN_IF_ERROR(CheckCount(where, "result.preparation_bytes_up", r.preparation_bytes_up()));
  FGL_RETURN_IF_ERROR(CheckCount(where, "result.uploaded_tensor_bytes", r.uploaded_tensor_bytes()));
  for (const auto& [group, bytes] : r.uploaded_tensor_bytes_by_group()) {
    FGL_RETURN_IF_ERROR(CheckCount(where, absl::StrCat("result.uploaded_tensor_bytes_by_group[", group, "]"), bytes));
  }
  FGL_RETURN_IF_ERROR(CheckCount(where, "peak_rss_bytes", record.peak_rss_bytes()));
  return absl::OkStatus();
}

absl::StatusOr<proto::RunRecord> ReadRunRecord(const std::string& path) {
  FGL_ASSIGN_OR_RETURN(std::string text, graph::io::ReadFileBytes(path, "", size_t{256} << 20));
  const absl::string_view line = absl::StripTrailingAsciiWhitespace(text);
  if (line.empty()) return Refuse(path, "empty run record");
  // The checksum, where the record has one: a flipped digit would still parse.
  if (line.size() > kChecksumSuffixSize &&
      line.substr(line.size() - kChecksumSuffixSize, kChecksumPrefix.size()) == kChecksumPrefix && line.back() == '}') {
    const absl::string_view stated = line.substr(line.size() - kChecksumSuffixSize + kChecksumPrefix.size(), 16);
    const std::string payload = absl::StrCat(line.substr(0, line.size() - kChecksumSuffixSize), "}");
    if (Checksum(payload) != stated) {
      return Refuse(path, absl::StrCat("checksum ", stated, " does not match its contents (", Checksum(payload),
                                       "): the record is damaged"));
    }
  } else if (absl::StrContains(line, "\"checksum\":")) {
    return Refuse(path, "its checksum is not the record's last member: the record is damaged");
  }
  proto::RunRecord record;
  if (absl::Status s = fl::FromJson(std::string(line), &record, path); !s.ok()) {
    return Refuse(path, absl::StrCat("not a run record (", s.message(), ")"));
  }
  // Misplaced: a record counts for the run its file name says, and it must be that run's.
  std::string stem = path.substr(path.find_last_of('/') + 1);
  if (absl::EndsWith(stem, ".json")) stem.resize(stem.size() - 5);
  if (record.key() != stem) return Refuse(path, absl::StrCat("holds the record of run '", record.key(), "', not of '", stem, "'"));
  if (const std::string own = RecordKey(record.result_version(), record.spec(), record.seed()); own != record.key()) {
    return Refuse(path, absl::StrCat("its key ", record.key(), " is not that of its own spec, seed and result version (",
                                     own, ")"));
  }
  if (absl::Status s = CheckRunRecord(record, path); !s.ok()) return absl::DataLossError(s.message());
  return record;
}

absl::Status WriteRunRecord(const std::string& path, const proto::RunRecord& record) {
  FGL_RETURN_IF_ERROR(CheckRunRecord(record, path));
  const std::string payload = fl::ToJsonLine(record);
  if (payload.empty() || payload.back() != '}') {
    return absl::InternalError(absl::StrCat(path, ": the record does not print as one JSON object"));
  }
  const std::string line =
      absl::StrCat(payload.substr(0, payload.size() - 1), kChecksumPrefix, Checksum(payload), "\"}\n");
  return graph::io::WriteFileAtomically(path, line);
}

}  // namespace fgl::experiments
