#include "fl/method_params.h"

#include <cmath>
#include <memory>
#include <set>

#include "absl/strings/str_join.h"

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

}  // namespace

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
