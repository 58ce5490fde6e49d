#include "fl/method_params.h"

#include <cmath>
#include <memory>
#include <set>

#include "absl/strings/str_join.h"
#include "fl/proto/range.pb.h"

namespace fgl::fl {
namespace {

using google::protobuf::FieldDescriptor;

const ParamsSpec* FindSpec(const std::vector<ParamsSpec>& accepted, const google::protobuf::Any& any) {
  for (const ParamsSpec& s : accepted) {
    if (s.type != nullptr && any.type_url() == absl::StrCat("type.googleapis.com/", s.type->full_name())) return &s;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> Unpack(const ParamsSpec& spec,
                                                                  const google::protobuf::Any& any) {
  std::unique_ptr<google::protobuf::Message> m(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(spec.type)->New());
  if (!any.UnpackTo(m.get())) {
    return absl::InvalidArgumentError(absl::StrCat("method_params: cannot decode ", spec.type->full_name()));
  }
  return m;
}

// The field's value `i` (of a repeated field) or its value (set or default), as a double for the
// range and as text for the error; false for a field that is not a number.
bool NumericValue(const google::protobuf::Message& m, const FieldDescriptor* f, int i, double* v, std::string* text) {
  const google::protobuf::Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      const int32_t x = rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f);
      *v = x;
      *text = absl::StrCat(x);
      return true;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      const int64_t x = rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f);
      *v = static_cast<double>(x);
      *text = absl::StrCat(x);
      return true;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      const uint32_t x = rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f);
      *v = x;
      *text = absl::StrCat(x);
      return true;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t x = rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f);
      *v = static_cast<double>(x);
      *text = absl::StrCat(x);
      return true;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      *v = rep ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f);
      *text = absl::StrCat(*v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const float x = rep ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f);
      *v = x;
      *text = absl::StrCat(x);
      return true;
    }
    default:
      return false;
  }
}

// "" when `v` lies in `range`, else what it must be ("must be >= 1", "must be in [0, 1)").
std::string OutOfRange(const proto::Range& range, double v) {
  const bool lo = range.has_min(), hi = range.has_max();
  const bool below = lo && (range.min_exclusive() ? !(v > range.min()) : !(v >= range.min()));
  const bool above = hi && (range.max_exclusive() ? !(v < range.max()) : !(v <= range.max()));
  if (!below && !above) return "";
  if (lo && hi) {
    return absl::StrCat("must be in ", range.min_exclusive() ? "(" : "[", range.min(), ", ", range.max(),
                        range.max_exclusive() ? ")" : "]");
  }
  if (lo) return absl::StrCat("must be ", range.min_exclusive() ? "> " : ">= ", range.min());
  return absl::StrCat("must be ", range.max_exclusive() ? "< " : "<= ", range.max());
}

}  // namespace

absl::Status CheckRanges(const google::protobuf::Message& message, absl::string_view where) {
  const google::protobuf::Descriptor* d = message.GetDescriptor();
  const google::protobuf::Reflection* r = message.GetReflection();
  for (int k = 0; k < d->field_count(); ++k) {
    const FieldDescriptor* f = d->field(k);
    if (f->containing_oneof() != nullptr && !r->HasField(message, f)) continue;
    const std::string name = absl::StrCat(where, where.empty() ? "" : ".", f->name());
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(message, f); ++i) {
          if (absl::Status s = CheckRanges(r->GetRepeatedMessage(message, f, i), absl::StrCat(name, "[", i, "]"));
              !s.ok()) {
            return s;
          }
        }
      } else if (r->HasField(message, f)) {
        if (absl::Status s = CheckRanges(r->GetMessage(message, f), name); !s.ok()) return s;
      }
      continue;
    }
    const bool has_range = f->options().HasExtension(proto::range);
    const proto::Range& range = f->options().GetExtension(proto::range);
    const int n = f->is_repeated() ? r->FieldSize(message, f) : 1;
    for (int i = 0; i < n; ++i) {
      double v = 0;
      std::string text;
      if (!NumericValue(message, f, i, &v, &text)) break;
      const std::string path = f->is_repeated() ? absl::StrCat(name, "[", i, "]") : name;
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(absl::StrCat(path, " = ", text, ": must be a finite number"));
      }
      if (!has_range) continue;
      if (std::string why = OutOfRange(range, v); !why.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(path, " = ", text, ": ", why));
      }
    }
  }
  return absl::OkStatus();
}

std::string ParamsName(const google::protobuf::Descriptor* type) {
  const std::string& package = type->file()->package();
  const std::string::size_type dot = package.rfind('.');
  if (package.empty()) return type->name();
  return dot == std::string::npos ? package : package.substr(dot + 1);
}

absl::Status CheckParamRanges(const google::protobuf::Message& params) {
  return CheckRanges(params, ParamsName(params.GetDescriptor()));
}

absl::Status CheckFinite(const google::protobuf::Message& message, absl::string_view where) {
  const google::protobuf::Reflection* r = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  for (const FieldDescriptor* f : fields) {
    const std::string name = absl::StrCat(where, where.empty() ? "" : ".", f->name());
    const int n = f->is_repeated() ? r->FieldSize(message, f) : 1;
    for (int i = 0; i < n; ++i) {
      double v = 0;
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_DOUBLE:
          v = f->is_repeated() ? r->GetRepeatedDouble(message, f, i) : r->GetDouble(message, f);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          v = f->is_repeated() ? r->GetRepeatedFloat(message, f, i) : r->GetFloat(message, f);
          break;
        case FieldDescriptor::CPPTYPE_MESSAGE: {
          const google::protobuf::Message& sub =
              f->is_repeated() ? r->GetRepeatedMessage(message, f, i) : r->GetMessage(message, f);
          if (absl::Status s = CheckFinite(sub, name); !s.ok()) return s;
          continue;
        }
        default:
          continue;
      }
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(absl::StrCat(name, " = ", v, ": must be a finite number"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckMethodParams(const std::string& method, const std::vector<ParamsSpec>& accepted,
                               const std::vector<google::protobuf::Any>& params, bool own_only) {
  std::set<std::string> seen;
  for (const google::protobuf::Any& any : params) {
    const ParamsSpec* spec = FindSpec(accepted, any);
    if (spec == nullptr && own_only) continue;
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const ParamsSpec& s : accepted) {
        if (s.type != nullptr) names.push_back(s.type->full_name());
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "method_params: ", any.type_url(), " is not a parameter type of method '", method, "' (it takes ",
          names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
    }
    if (!seen.insert(spec->type->full_name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("method_params: ", spec->type->full_name(), " given twice"));
    }
    absl::StatusOr<std::unique_ptr<google::protobuf::Message>> m = Unpack(*spec, any);
    if (!m.ok()) return m.status();
    if (absl::Status s = CheckFinite(**m, spec->type->name()); !s.ok()) return s;
    if (spec->validate) {
      if (absl::Status s = spec->validate(**m); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace fgl::fl
