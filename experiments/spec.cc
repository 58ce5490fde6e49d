#include "experiments/spec.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fl/registry.h"
#include "nn/models/gnn_model.h"
#include "graph/io/file.h"
#include "graph/random.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::experiments {
namespace {

class Collector final : public google::protobuf::io::ErrorCollector {
 public:
  explicit Collector(std::string file) : file_(std::move(file)) {}
  void AddError(int line, int column, const std::string& message) override {
    errors_.push_back(absl::StrCat(file_, ":", line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int line, int column, const std::string& message) override {
    AddError(line, column, message);
  }
  std::string Joined() const { return absl::StrJoin(errors_, "; "); }

 private:
  std::string file_;
  std::vector<std::string> errors_;
};

// The baselines of the five papers that are not implemented yet: table rows may name them.
const std::set<std::string>& PlannedMethods() {
  static const auto* planned = new std::set<std::string>{
      "fedtad_r_eq", "fedgkc", "fedproto", "lg_fedavg",
      "fedgh", "fml", "fedkd", "fedmd", "fedego", "fedego_linear", "fedego_no_mixup", "fedmpa",
      "fedmpae", "fedmlp", "graphfl", "fedgcn", "d_fedgnn", "nfedgnn",
      "cnfgnn", "fedper", "ditto", "fedrep", "fedbn", "apfl", "fedamp", "pfedme", "fedgta_plus",
      "fedtad_plugin", "fedstar", "fedlit", "feddep", "fedegonl", "fedamp_gnn", "fedsage_plus_fedtad",
      "gcfl_plus_fedtad", "fedpub_fedtad", "fedgta_fedtad", "fedtgp", "fgssl", "adafgl",
      "fedgkc_base", "fedgkc_smkd", "fedgkc_kama", "locmpa", "fedego_no_pl", "fedego_lambda0p5",
      "fedego_server"};
  return *planned;
}

}  // namespace

absl::Status ParseTextProtoFile(const std::string& path, google::protobuf::Message* message) {
  FGL_ASSIGN_OR_RETURN(std::string text, graph::io::ReadFileBytes(path, "", size_t{16} << 20));
  Collector errors(path);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  return absl::OkStatus();
}

absl::StatusOr<proto::Experiment> LoadExperiment(const std::string& path) {
  proto::Experiment e;
  FGL_RETURN_IF_ERROR(ParseTextProtoFile(path, &e));
  return e;
}

absl::StatusOr<proto::Table> LoadTable(const std::string& path) {
  proto::Table t;
  FGL_RETURN_IF_ERROR(ParseTextProtoFile(path, &t));
  FGL_RETURN_IF_ERROR(ValidateTable(t, path));
  return t;
}

absl::Status ApplySet(const std::string& assignment, proto::Experiment* experiment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--set ", assignment, ": expected key=value"));
  }
  std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  // "a.b=v" becomes "a { b: v }"; strings are quoted unless already quoted.
  std::vector<std::string> path = absl::StrSplit(key, '.');
  const google::protobuf::Descriptor* d = experiment->GetDescriptor();
  const google::protobuf::FieldDescriptor* field = nullptr;
  for (size_t i = 0; i < path.size(); ++i) {
    field = d->FindFieldByName(path[i]);
    if (field == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", assignment, ": no field '", path[i], "'"));
    }
    if (i + 1 < path.size()) {
      if (field->type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
        return absl::InvalidArgumentError(absl::StrCat("--set ", assignment, ": '", path[i], "' has no fields"));
      }
      d = field->message_type();
    }
  }
  if (field->type() == google::protobuf::FieldDescriptor::TYPE_STRING && (value.empty() || value[0] != '"')) {
    value = absl::StrCat("\"", value, "\"");
  }
  std::string text = absl::StrCat(path.back(), ": ", value);
  for (size_t i = path.size() - 1; i > 0; --i) text = absl::StrCat(path[i - 1], " { ", text, " }");
  // A --set replaces a list rather than appending to it (only top-level lists exist).
  if (field->is_repeated() && path.size() == 1) experiment->GetReflection()->ClearField(experiment, field);
  proto::Experiment patch;
  Collector errors("--set " + assignment);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &patch)) return absl::InvalidArgumentError(errors.Joined());
  experiment->MergeFrom(patch);
  return absl::OkStatus();
}

bool ModelImplemented(const std::string& model_specs) {
  for (absl::string_view spec : absl::StrSplit(model_specs, ';', absl::SkipEmpty())) {
    auto m = nn::MakeModel(std::string(spec), 4, 2);
    if (!m.ok() && m.status().code() == absl::StatusCode::kNotFound) return false;
  }
  return true;
}

MethodStatus GetMethodStatus(const std::string& method) {
  if (method == "centralized" || fl::FindMethod(method).ok()) return MethodStatus::kImplemented;
  if (PlannedMethods().count(method)) return MethodStatus::kPlanned;
  // A plug-in after a method that is not built yet (e.g. "gcfl_plus+fedtad") is planned too.
  if (const size_t plus = method.rfind('+'); plus != std::string::npos &&
      GetMethodStatus(method.substr(0, plus)) == MethodStatus::kPlanned &&
      fl::FindMethod("fedavg" + method.substr(plus)).ok()) {
    return MethodStatus::kPlanned;
  }
  return MethodStatus::kUnknown;
}

absl::StatusOr<proto::Experiment> Resolve(const proto::Experiment& in, const std::string& where) {
  proto::Experiment e = in;
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
  };
  if (e.dataset().empty()) return bad("dataset is required");
  if (e.method().empty()) return bad("method is required");
  if (GetMethodStatus(e.method()) == MethodStatus::kUnknown) {
    return bad(absl::StrCat("unknown method '", e.method(), "'"));
  }
  if (e.partitioner().empty()) e.set_partitioner("louvain");
  if (e.clients() == 0) e.set_clients(10);
  if (e.partition_seed() == 0) e.set_partition_seed(2024);
  if (e.split().empty()) e.set_split("stratified:train=0.2,val=0.4");
  if (e.model().empty()) e.set_model("gcn:layers=2,hidden=64,dropout=0.5");
  if (e.rounds() == 0) e.set_rounds(100);
  if (e.local_epochs() == 0) e.set_local_epochs(3);
  if (e.lr() == 0) e.set_lr(0.01);
  if (!e.has_weight_decay()) e.set_weight_decay(5e-4);
  if (e.client_fraction() == 0) e.set_client_fraction(1.0);
  if (e.eval().model().empty()) e.mutable_eval()->set_model("global");
  if (e.eval().weighting().empty()) e.mutable_eval()->set_weighting("node");
  if (e.eval().round().empty()) e.mutable_eval()->set_round("best_val");
  // false is the default: spelled or not, the same experiment (and the same cache key).
  if (e.eval().has_dropout_at_eval() && !e.eval().dropout_at_eval()) e.mutable_eval()->clear_dropout_at_eval();
  if (e.seeds().empty()) {
    for (uint64_t s : {2024, 1, 2}) e.add_seeds(s);
  }
  if (e.method() == "fedprox" && !e.has_fedprox()) e.mutable_fedprox()->set_mu(1e-3);
  if (e.has_fedprox() && e.method() != "fedprox") return bad("fedprox params set for method " + e.method());
  if (e.has_moon() && e.method() != "moon") return bad("moon params set for method " + e.method());
  if (e.has_feddc() && e.method() != "feddc") return bad("feddc params set for method " + e.method());
  if (e.has_fedpub() && e.method() != "fedpub" && e.method() != "fedpub+fedtad") {
    return bad("fedpub params set for method " + e.method());
  }
  if (e.fedpub().l1() < 0 || e.fedpub().loc_l2() < 0) return bad("fedpub: l1 and loc_l2 must be >= 0");
  const bool fedtad = e.method() == "fedtad" || absl::EndsWith(e.method(), "+fedtad");
  if (e.has_fedtad() && !fedtad) return bad("fedtad params set for method " + e.method());
  if (e.has_fedtad() && (e.fedtad().reliability_noise() < 0 || e.fedtad().iterations() < 0 ||
                         e.fedtad().generator_steps() < 0 || e.fedtad().distill_steps() < 0)) {
    return bad("fedtad: reliability_noise and step counts must be >= 0");
  }
  if (e.clients() < 0) return bad(absl::StrCat("clients = ", e.clients()));
  if (e.rounds() < 0 || e.local_epochs() < 0) return bad("rounds and local_epochs must be >= 0");
  if (e.lr() < 0 || e.weight_decay() < 0) return bad("lr and weight_decay must be >= 0");
  if (e.client_fraction() <= 0 || e.client_fraction() > 1) {
    return bad(absl::StrCat("client_fraction = ", e.client_fraction(), " outside (0, 1]"));
  }
  const std::set<std::string> models = {"global", "local", "personalized"}, weightings = {"node", "unweighted"},
                              rounds = {"best_val", "last", "best_test"};
  if (!models.count(e.eval().model())) return bad("eval.model = " + e.eval().model());
  if (!weightings.count(e.eval().weighting())) return bad("eval.weighting = " + e.eval().weighting());
  if (!rounds.count(e.eval().round())) return bad("eval.round = " + e.eval().round());
  return e;
}

absl::StatusOr<fl::FederationOptions> ToFederationOptions(const proto::Experiment& e, uint64_t seed) {
  fl::FederationOptions o;
  o.dataset = e.dataset();
  o.data_dir = e.data_dir();
  o.partitioner = e.partitioner();
  o.clients = e.clients();
  o.partition_seed = e.partition_seed();
  o.split = e.split();
  o.method = e.method();
  o.model = e.model();
  o.shared_group = e.shared_group();
  if (e.has_fedprox()) o.method_params["mu"] = e.fedprox().mu();
  if (e.moon().has_mu()) o.method_params["mu"] = e.moon().mu();
  if (e.moon().has_tau()) o.method_params["tau"] = e.moon().tau();
  if (e.feddc().has_alpha()) o.method_params["alpha"] = e.feddc().alpha();
  if (e.fedpub().has_l1()) o.method_params["l1"] = e.fedpub().l1();
  if (e.fedpub().has_loc_l2()) o.method_params["loc_l2"] = e.fedpub().loc_l2();
  if (e.has_fedtad()) {
    const proto::FedTadParams& t = e.fedtad();
    o.method_params["reliability"] = static_cast<double>(t.reliability());
    o.method_params["reliability_noise"] = t.reliability_noise();
    o.method_params["loss_form"] = static_cast<double>(t.loss_form());
    if (t.has_iterations()) o.method_params["iterations"] = t.iterations();
    if (t.has_generator_steps()) o.method_params["generator_steps"] = t.generator_steps();
    if (t.has_distill_steps()) o.method_params["distill_steps"] = t.distill_steps();
    if (t.has_lambda_sem()) o.method_params["lambda_sem"] = t.lambda_sem();
    if (t.has_lambda_div()) o.method_params["lambda_div"] = t.lambda_div();
    if (t.has_use_sem()) o.method_params["use_sem"] = t.use_sem();
    if (t.has_use_div()) o.method_params["use_div"] = t.use_div();
    if (t.has_use_diverg()) o.method_params["use_diverg"] = t.use_diverg();
    if (t.has_self_loop_weight()) o.method_params["self_loop_weight"] = t.self_loop_weight();
    if (t.real_graph()) o.method_params["oracle_graph"] = 1;
  }
  o.rounds = e.rounds();
  o.local_epochs = e.local_epochs();
  o.lr = e.lr();
  o.weight_decay = e.weight_decay();
  o.client_fraction = e.client_fraction();
  o.eval.model = e.eval().model() == "local"          ? fl::EvalProtocol::Model::kLocal
                 : e.eval().model() == "personalized" ? fl::EvalProtocol::Model::kPersonalized
                                                      : fl::EvalProtocol::Model::kGlobal;
  o.eval.node_weighted = e.eval().weighting() == "node";
  o.eval.round = e.eval().round() == "last"        ? fl::EvalProtocol::Round::kLast
                 : e.eval().round() == "best_test" ? fl::EvalProtocol::Round::kBestTest
                                                   : fl::EvalProtocol::Round::kBestVal;
  o.eval.dropout_at_eval = e.eval().dropout_at_eval();
  if (o.method == "local") o.eval.model = fl::EvalProtocol::Model::kLocal;
  o.seed = seed;
  return o;
}

absl::StatusOr<proto::Experiment> CellExperiment(const proto::Table& table, const proto::Cell& cell) {
  proto::Experiment e = table.base();
  for (const proto::Row& r : table.rows())
    if (r.key() == cell.row()) e.MergeFrom(r.overrides());
  for (const proto::Column& c : table.columns())
    if (c.key() == cell.column()) e.MergeFrom(c.overrides());
  e.MergeFrom(cell.overrides());
  {
    // Seeds are a list: the most specific level that sets them wins (MergeFrom would append).
    const google::protobuf::RepeatedField<uint64_t>* seeds = &table.base().seeds();
    for (const proto::Row& r : table.rows())
      if (r.key() == cell.row() && !r.overrides().seeds().empty()) seeds = &r.overrides().seeds();
    for (const proto::Column& c : table.columns())
      if (c.key() == cell.column() && !c.overrides().seeds().empty()) seeds = &c.overrides().seeds();
    if (!cell.overrides().seeds().empty()) seeds = &cell.overrides().seeds();
    *e.mutable_seeds() = *seeds;
  }
  return e;
}

absl::Status ValidateTable(const proto::Table& t, const std::string& where) {
  std::set<std::string> rows, cols;
  for (const proto::Row& r : t.rows()) {
    if (!rows.insert(r.key()).second) return absl::InvalidArgumentError(absl::StrCat(where, ": row '", r.key(), "' twice"));
    const std::string& m = r.overrides().method();
    if (!m.empty() && GetMethodStatus(m) == MethodStatus::kUnknown) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": row '", r.key(), "': unknown method '", m, "'"));
    }
  }
  for (const proto::Column& c : t.columns()) {
    if (!cols.insert(c.key()).second) return absl::InvalidArgumentError(absl::StrCat(where, ": column '", c.key(), "' twice"));
  }
  std::set<std::pair<std::string, std::string>> cells;
  for (const proto::Cell& c : t.cells()) {
    if (!rows.count(c.row())) return absl::InvalidArgumentError(absl::StrCat(where, ": cell names unknown row '", c.row(), "'"));
    if (!cols.count(c.column())) return absl::InvalidArgumentError(absl::StrCat(where, ": cell names unknown column '", c.column(), "'"));
    if (!cells.emplace(c.row(), c.column()).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": cell (", c.row(), ", ", c.column(), ") twice"));
    }
  }
  return absl::OkStatus();
}

std::string CanonicalText(const proto::Experiment& resolved) {
  std::string out;
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  printer.PrintToString(resolved, &out);
  return out;
}

std::string ResultCacheKey(const proto::Experiment& resolved, uint64_t seed, const std::string& version) {
  proto::Experiment keyed = resolved;
  keyed.clear_seeds();
  keyed.clear_name();
  keyed.clear_data_dir();
  const std::string text = absl::StrCat(version, "|", CanonicalText(keyed), "|seed=", seed);
  return absl::StrFormat("%016x", graph::Fnv1a64(text.data(), text.size()));
}

}  // namespace fgl::experiments
