// Loading, resolving and validating experiment specs and tables (textprotos). Errors name the
// file and line; unknown fields and unknown method names are rejected.
#ifndef FGL_EXPERIMENTS_SPEC_H_
#define FGL_EXPERIMENTS_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/proto/experiment.pb.h"
#include "experiments/proto/table.pb.h"
#include "fl/simulator.h"

namespace fgl::experiments {

// Parses a textproto file into `message`; InvalidArgument "file:line:col: ..." on any error.
absl::Status ParseTextProtoFile(const std::string& path, google::protobuf::Message* message);

absl::StatusOr<proto::Experiment> LoadExperiment(const std::string& path);
absl::StatusOr<proto::Table> LoadTable(const std::string& path);

// The Experiment field a dotted path names ("fedtad.knn"); InvalidArgument naming the part that
// is not a field ("no field 'knn'") or that has no fields.
absl::StatusOr<const google::protobuf::FieldDescriptor*> ExperimentField(const std::string& path);

// Applies one "--set name=value" override: one field of Experiment by its (dotted) name, set to one
// value in textproto syntax ("clients=5", "eval.dropout_at_eval=true", "fedprox.mu=0.01",
// "optimizer=ADAM"; a bare string is taken as is: "split=stratified:train=0.6,val=0.2"; a list as
// "seeds=7" or "seeds=[7, 8]", replacing it). Anything else is an InvalidArgument: an empty value, a
// group of options ("eval=..."), or more than one value ("clients=3 rounds: 1").
absl::Status ApplySet(const std::string& assignment, proto::Experiment* experiment);

// Fills the FederationSpec defaults (fl::ResolveFederationSpec) and seeds [2024, 1, 2], and checks
// every value: ranges, finiteness, the method's own parameter messages and their values. Errors
// name `where`, the field and the value.
absl::StatusOr<proto::Experiment> Resolve(const proto::Experiment& experiment, const std::string& where);

// Method status: implemented (registered) or unknown (an error).
enum class MethodStatus { kImplemented, kUnknown };
MethodStatus GetMethodStatus(const std::string& method);

// A resolved experiment as the run's FederationSpec (typed parameters packed into method_params),
// and as simulator options for one training seed.
fl::proto::FederationSpec ToFederationSpec(const proto::Experiment& resolved);
fl::FederationOptions ToFederationOptions(const proto::Experiment& resolved, uint64_t seed);

// The experiment of one table cell: base, then row, column and cell overrides.
absl::StatusOr<proto::Experiment> CellExperiment(const proto::Table& table, const proto::Cell& cell);

// Checks a table: unique row/column keys, every cell's keys exist, no duplicate cells.
absl::Status ValidateTable(const proto::Table& table, const std::string& where);

// Canonical text of a resolved experiment (the cache key's input).
std::string CanonicalText(const proto::Experiment& resolved);

// What the cache key hashes besides version and seed: the canonical text without name, seed list
// and data root.
std::string KeyedSpecText(const proto::Experiment& resolved);

// The result version in every cache key; bump it when a change alters what a cached result means.
inline constexpr char kResultVersion[] = "results-v1";

// The result-cache key of one run: a hash of `version`, the resolved experiment without its name,
// seed list and data root, and `seed`. Any hyperparameter, the seed or the version changes it.
std::string ResultCacheKey(const proto::Experiment& resolved, uint64_t seed, const std::string& version);

// The same key from its parts as a run record holds them (result_version, spec, seed): a record
// names the run whose key this is.
std::string RecordKey(const std::string& version, const std::string& keyed_spec_text, uint64_t seed);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_SPEC_H_
