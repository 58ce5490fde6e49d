#include "experiments/spec.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fl/federation.h"
#include "fl/federation_spec.h"
#include "fl/registry.h"
#include "glog/logging.h"
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

absl::Status PrefixError(const absl::Status& s, const std::string& where) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
}

}  // namespace

absl::Status ParseTextProtoFile(const std::string& path, google::protobuf::Message* message) {
  FGL_ASSIGN_OR_RETURN(std::string text, graph::io::ReadFileBytes(path, "", size_t{16} << 20));
  Collector errors(path);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    std::string why = errors.Joined();
    // The likeliest cause in a spec written before #67: a quoted evaluation setting.
    if (absl::StrContains(why, "Expected integer or identifier, got: \"")) {
      absl::StrAppend(&why, " (enum values are written without quotes: eval { model: LOCAL weighting: NODE "
                            "round: BEST_VAL global_test: WHOLE_GRAPH }, not round: \"best_val\")");
    }
    return absl::InvalidArgumentError(why);
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

absl::StatusOr<const google::protobuf::FieldDescriptor*> ExperimentField(const std::string& path) {
  const google::protobuf::Descriptor* d = proto::Experiment::descriptor();
  const google::protobuf::FieldDescriptor* field = nullptr;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    if (d == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("'", field->name(), "' has no fields"));
    }
    field = d->FindFieldByName(std::string(part));
    if (field == nullptr) return absl::InvalidArgumentError(absl::StrCat("no field '", part, "'"));
    d = field->message_type();
  }
  return field;
}

absl::Status ApplySet(const std::string& assignment, proto::Experiment* experiment) {
  using google::protobuf::FieldDescriptor;
  auto refuse = [&assignment](auto&&... why) {
    return absl::InvalidArgumentError(absl::StrCat("--set ", assignment, ": ", why...));
  };
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) return refuse("expected name=value");
  const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  absl::StatusOr<const FieldDescriptor*> found = ExperimentField(key);
  if (!found.ok()) return refuse(found.status().message());
  const FieldDescriptor* field = *found;
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    return refuse("'", key, "' holds several options: set one at a time (", key, ".NAME=VALUE)");
  }
  // An empty value would leave the field as it was (the default): say so rather than run that.
  if (value.empty()) return refuse("empty value");
  // The value is one value of this one field, never text pasted into a textproto: "clients=3
  // rounds: 1" must not also set rounds. Applied to a copy, so a refused value changes nothing.
  proto::Experiment updated = *experiment;
  google::protobuf::Message* target = &updated;
  const std::vector<std::string> path = absl::StrSplit(key, '.');
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const FieldDescriptor* part = target->GetDescriptor()->FindFieldByName(path[i]);
    if (part->is_repeated()) return refuse("'", path[i], "' is a list of messages");
    target = target->GetReflection()->MutableMessage(target, part);  // selects a oneof's member
  }
  // Parsed into an empty message of the field's own type, then copied over the field: the value
  // replaces what was there, a list included ("seeds=7" or "seeds=[7, 8]"), even where it equals
  // the default (which a merge would skip).
  std::unique_ptr<google::protobuf::Message> parsed(target->New());
  const google::protobuf::Reflection* reflection = parsed->GetReflection();
  std::vector<std::string> items;
  if (field->is_repeated() && value.front() == '[' && value.back() == ']') {
    for (absl::string_view item : absl::StrSplit(value.substr(1, value.size() - 2), ',')) {
      items.emplace_back(absl::StripAsciiWhitespace(item));
    }
  } else {
    items.push_back(value);
  }
  for (const std::string& item : items) {
    if (item.empty()) return refuse("empty value");
    if (field->type() == FieldDescriptor::TYPE_STRING && item[0] != '"') {
      // A bare string is the string itself (a quoted one is read as in a textproto).
      if (field->is_repeated()) {
        reflection->AddString(parsed.get(), field, item);
      } else {
        reflection->SetString(parsed.get(), field, item);
      }
      continue;
    }
    Collector errors("--set " + assignment);
    google::protobuf::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFieldValueFromString(item, field, parsed.get())) {
      const std::string why = errors.Joined();
      std::string values;
      if (field->type() == FieldDescriptor::TYPE_ENUM) {  // say what it can be: "one of GLOBAL, LOCAL, ..."
        std::vector<std::string> names;
        for (int i = 0; i < field->enum_type()->value_count(); ++i) {
          // Zero is a real setting in some enums (SERVER_NODES, ADAM); only "unset" is left out.
          const std::string& name = field->enum_type()->value(i)->name();
          if (!absl::EndsWith(name, "_UNSPECIFIED")) names.push_back(name);
        }
        values = absl::StrCat(" (", key, " is one of ", absl::StrJoin(names, ", "), ")");
      }
      if (!why.empty()) return absl::InvalidArgumentError(absl::StrCat(why, values));
      return refuse("'", item, "' is not one ", field->type_name(), " value for ", key, values);
    }
  }
  if (field->type() == FieldDescriptor::TYPE_STRING && !field->is_repeated() &&
      reflection->GetString(*parsed, field).empty()) {
    return refuse("empty value");
  }
  target->GetReflection()->ClearField(target, field);
  target->MergeFrom(*parsed);
  *experiment = std::move(updated);
  return absl::OkStatus();
}

MethodStatus GetMethodStatus(const std::string& method) {
  if (fl::FindMethod(method).ok()) return MethodStatus::kImplemented;
  return MethodStatus::kUnknown;
}

namespace {

using google::protobuf::FieldDescriptor;

// Experiment's own fields (name, seeds, typed method parameters): those FederationSpec lacks.
const std::vector<const FieldDescriptor*>& OwnFields() {
  static const auto* own = [] {
    auto* v = new std::vector<const FieldDescriptor*>;
    const google::protobuf::Descriptor* e = proto::Experiment::descriptor();
    for (int i = 0; i < e->field_count(); ++i) {
      if (fl::proto::FederationSpec::descriptor()->FindFieldByNumber(e->field(i)->number()) == nullptr) {
        v->push_back(e->field(i));
      }
    }
    return v;
  }();
  return *own;
}

// The typed method-parameter fields that are set (fedprox, fedtad, ...).
std::vector<const FieldDescriptor*> SetParamFields(const proto::Experiment& e) {
  std::vector<const FieldDescriptor*> set;
  for (const FieldDescriptor* f : OwnFields()) {
    if (f->type() == FieldDescriptor::TYPE_MESSAGE && e.GetReflection()->HasField(e, f)) set.push_back(f);
  }
  return set;
}

// Sets each field of `to` from the field of the same number in `from`, where `from` has it set
// (presence as protobuf defines it); fields only one of them declares are left alone. Experiment
// carries FederationSpec's fields under the same numbers, names and types
// (spec_test's ExperimentCarriesEveryFederationSpecField); a pair that differs is a programmer error.
void CopySharedFields(const google::protobuf::Message& from, google::protobuf::Message* to) {
  const google::protobuf::Reflection* in = from.GetReflection();
  const google::protobuf::Reflection* out = to->GetReflection();
  for (int i = 0; i < to->GetDescriptor()->field_count(); ++i) {
    const FieldDescriptor* t = to->GetDescriptor()->field(i);
    const FieldDescriptor* f = from.GetDescriptor()->FindFieldByNumber(t->number());
    if (f == nullptr) continue;
    CHECK(f->name() == t->name() && f->type() == t->type() && f->is_repeated() == t->is_repeated() &&
          f->message_type() == t->message_type() && f->enum_type() == t->enum_type())
        << from.GetTypeName() << "." << f->name() << " and " << to->GetTypeName() << "." << t->name()
        << " share number " << t->number() << " but not their name and type";
    out->ClearField(to, t);
    const int n = f->is_repeated() ? in->FieldSize(from, f) : (in->HasField(from, f) ? 1 : 0);
    for (int k = 0; k < n; ++k) {
      const bool rep = f->is_repeated();
      switch (f->cpp_type()) {
#define FGL_COPY_FIELD(CPPTYPE, NAME)                          \
  case FieldDescriptor::CPPTYPE:                              \
    if (rep) {                                                \
      out->Add##NAME(to, t, in->GetRepeated##NAME(from, f, k)); \
    } else {                                                  \
      out->Set##NAME(to, t, in->Get##NAME(from, f));          \
    }                                                         \
    break;
        FGL_COPY_FIELD(CPPTYPE_INT32, Int32)
        FGL_COPY_FIELD(CPPTYPE_INT64, Int64)
        FGL_COPY_FIELD(CPPTYPE_UINT32, UInt32)
        FGL_COPY_FIELD(CPPTYPE_UINT64, UInt64)
        FGL_COPY_FIELD(CPPTYPE_DOUBLE, Double)
        FGL_COPY_FIELD(CPPTYPE_FLOAT, Float)
        FGL_COPY_FIELD(CPPTYPE_BOOL, Bool)
        FGL_COPY_FIELD(CPPTYPE_ENUM, EnumValue)
        FGL_COPY_FIELD(CPPTYPE_STRING, String)
#undef FGL_COPY_FIELD
        case FieldDescriptor::CPPTYPE_MESSAGE:
          (rep ? out->AddMessage(to, t) : out->MutableMessage(to, t))
              ->CopyFrom(rep ? in->GetRepeatedMessage(from, f, k) : in->GetMessage(from, f));
          break;
      }
    }
  }
}

// The FederationSpec fields of an Experiment, without params.
fl::proto::FederationSpec SpecFields(const proto::Experiment& e) {
  fl::proto::FederationSpec spec;
  CopySharedFields(e, &spec);
  return spec;
}

}  // namespace

absl::StatusOr<proto::Experiment> Resolve(const proto::Experiment& in, const std::string& where) {
  if (in.method().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": method is required"));
  if (GetMethodStatus(in.method()) == MethodStatus::kUnknown) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": unknown method '", in.method(), "'"));
  }
  FGL_ASSIGN_OR_RETURN(const fl::proto::FederationSpec spec, fl::ResolveFederationSpec(SpecFields(in), where));
  proto::Experiment e;
  CopySharedFields(spec, &e);
  proto::Experiment own = in;
  own.GetReflection()->SwapFields(&own, &e, OwnFields());
  if (e.seeds().empty()) {
    for (uint64_t s : {2024, 1, 2}) e.add_seeds(s);
  }
  if (std::set<uint64_t>(e.seeds().begin(), e.seeds().end()).size() != static_cast<size_t>(e.seeds_size())) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": seeds = [", absl::StrJoin(e.seeds(), ", "),
                                                   "]: a seed is listed twice"));
  }
  // Only the method's own parameter messages (and its plug-ins') may be set; then their values.
  FGL_ASSIGN_OR_RETURN(const fl::MethodFactories method, fl::FindMethod(e.method()));
  for (const FieldDescriptor* f : SetParamFields(e)) {
    bool accepted = false;
    std::vector<std::string> takes;
    for (const fl::ParamsSpec& p : method.params) {
      accepted |= p.type == f->message_type();
      for (const FieldDescriptor* g : OwnFields()) {
        if (g->message_type() == p.type) takes.push_back(g->name());
      }
    }
    if (!accepted) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", f->name(), " params set for method '", e.method(),
                                                     "', which takes ", takes.empty() ? "none" : absl::StrJoin(takes, ", ")));
    }
    // Named as the user spells them (fedtad.knn), before fl names them by type.
    FGL_RETURN_IF_ERROR(PrefixError(fl::CheckFinite(e.GetReflection()->GetMessage(e, f), f->name()), where));
  }
  // results-v1 cache keys were computed with FedProx's mu spelled out in every FedProx spec.
  if (e.method() == "fedprox" && !e.has_fedprox()) e.mutable_fedprox()->set_mu(e.fedprox().mu());
  FGL_RETURN_IF_ERROR(PrefixError(fl::CheckMethod(ToFederationSpec(e)).status(), where));
  return e;
}

fl::proto::FederationSpec ToFederationSpec(const proto::Experiment& resolved) {
  fl::proto::FederationSpec spec = SpecFields(resolved);
  for (const FieldDescriptor* f : SetParamFields(resolved)) {
    spec.add_method_params()->PackFrom(resolved.GetReflection()->GetMessage(resolved, f));
  }
  return spec;
}

fl::FederationOptions ToFederationOptions(const proto::Experiment& resolved, uint64_t seed) {
  fl::FederationOptions o;
  o.spec = ToFederationSpec(resolved);
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
  const auto& spread_seeds = t.partition_spread().partition_seeds();
  if (std::set<uint64_t>(spread_seeds.begin(), spread_seeds.end()).size() != static_cast<size_t>(spread_seeds.size())) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": partition_spread lists a partition seed twice"));
  }
  for (const std::string& r : t.partition_spread().rows()) {
    if (!rows.count(r)) return absl::InvalidArgumentError(absl::StrCat(where, ": partition_spread names unknown row '", r, "'"));
  }
  for (const proto::Claim& claim : t.claims()) {
    // Every key the claim names with the field that names it, so an error points at the field.
    // `others` are columns for a column claim, rows for every other kind.
    const bool column_claim = claim.kind() == proto::Claim::COLUMN_AT_LEAST_OTHERS;
    std::vector<std::pair<const char*, std::string>> named_rows, named_columns;
    for (const std::string& o : claim.others()) (column_claim ? named_columns : named_rows).emplace_back("others", o);
    if (!claim.row().empty()) named_rows.emplace_back("row", claim.row());
    if (!claim.base().empty()) named_rows.emplace_back("base", claim.base());
    if (!claim.column().empty()) named_columns.emplace_back("column", claim.column());
    // A region names its rows and columns; a misspelt key would silently leave a cell out of it.
    const bool region_claim = claim.kind() == proto::Claim::BEST_IN_REGION;
    const bool has_region = !claim.region_rows().empty() || !claim.region_columns().empty();
    if (region_claim && (claim.region_rows().empty() || claim.region_columns().empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": claim '", claim.text(), "': BEST_IN_REGION needs region_rows and region_columns"));
    }
    if (!region_claim && has_region) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": claim '", claim.text(), "': region_rows/region_columns belong to BEST_IN_REGION claims"));
    }
    for (const std::string& r : claim.region_rows()) named_rows.emplace_back("region_rows", r);
    for (const std::string& c : claim.region_columns()) named_columns.emplace_back("region_columns", c);
    if (column_claim && claim.column().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": column claim '", claim.text(), "' names no column"));
    }
    for (const auto& [field, r] : named_rows) {
      if (!rows.count(r)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": claim '", claim.text(), "' names unknown row '", r, "' in ", field));
      }
    }
    for (const auto& [field, c] : named_columns) {
      if (!cols.count(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": claim '", claim.text(), "' names unknown column '", c, "' in ", field));
      }
    }
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
  fl::UseCanonicalEvalText(&printer);  // `round: "best_test"`, as when it was a string: keys unchanged
  printer.PrintToString(resolved, &out);
  return out;
}

std::string KeyedSpecText(const proto::Experiment& resolved) {
  proto::Experiment keyed = resolved;
  keyed.clear_seeds();
  keyed.clear_name();
  keyed.clear_data_dir();
  return CanonicalText(keyed);
}

std::string ResultCacheKey(const proto::Experiment& resolved, uint64_t seed, const std::string& version) {
  return RecordKey(version, KeyedSpecText(resolved), seed);
}

std::string RecordKey(const std::string& version, const std::string& keyed_spec_text, uint64_t seed) {
  const std::string text = absl::StrCat(version, "|", keyed_spec_text, "|seed=", seed);
  return absl::StrFormat("%016x", graph::Fnv1a64(text.data(), text.size()));
}

}  // namespace fgl::experiments
