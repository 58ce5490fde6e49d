// Typed method parameters: each method owns a protobuf message (e.g. methods/fedtad/fedtad.proto's
// FedTadParams) whose field declarations state the defaults. fl carries them as
// google.protobuf.Any without knowing their types; a method reads its own with MethodParams<P>.
#ifndef FGL_FL_METHOD_PARAMS_H_
#define FGL_FL_METHOD_PARAMS_H_

#include <google/protobuf/any.pb.h>
#include <google/protobuf/message.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace fgl::fl {

// The parameter type a method or plug-in takes, and the check of its values.
struct ParamsSpec {
  const google::protobuf::Descriptor* type = nullptr;
  // INVALID_ARGUMENT naming the field and the value for anything out of range.
  std::function<absl::Status(const google::protobuf::Message&)> validate;
};

// Every integer and floating-point field of `message` is finite and inside the range its
// declaration states (fl/proto/range.proto), e.g.
//   optional int64 knn = 16 [default = 5, (fgl.fl.proto.range) = {min: 1}];
// Singular fields are checked whether set or defaulted, repeated fields element by element, and
// set sub-messages (and every element of repeated ones) recursively; of a oneof only the set member.
// The error names the field's path and its value: "<where>.<field>[.<sub>...] = <value>: must be
// >= 1" (a repeated element as "<field>[i]").
absl::Status CheckRanges(const google::protobuf::Message& message, absl::string_view where);

// How a run names a method's parameters: the last component of the message's proto package
// (fgl.methods.fedtad.FedTadParams -> "fedtad", as in `--set=fedtad.knn=3`).
std::string ParamsName(const google::protobuf::Descriptor* type);

// CheckRanges(params, ParamsName(params' type)).
absl::Status CheckParamRanges(const google::protobuf::Message& params);

// P as a parameter type: its values are checked by CheckParamRanges and then, if given, by
// `validate` (only for what the ranges cannot say, e.g. one field bounded by another).
template <typename P>
ParamsSpec TypedParams(absl::Status (*validate)(const P&) = nullptr) {
  ParamsSpec s;
  s.type = P::descriptor();
  s.validate = [validate](const google::protobuf::Message& m) {
    if (absl::Status st = CheckParamRanges(m); !st.ok()) return st;
    return validate == nullptr ? absl::OkStatus() : validate(static_cast<const P&>(m));
  };
  return s;
}

// Every float and double field of `message` (recursively) is finite; the error names the field
// as "<where>.<field> = <value>".
absl::Status CheckFinite(const google::protobuf::Message& message, absl::string_view where);

// Checks a run's parameter messages against what the method `method` takes (`accepted`): each
// message's type is one of them and appears once, unpacks, is finite and passes `validate`.
// With `own_only`, messages of other types are skipped (a base method's factory inside a plug-in
// composition sees the plug-in's parameters too).
absl::Status CheckMethodParams(const std::string& method, const std::vector<ParamsSpec>& accepted,
                               const std::vector<google::protobuf::Any>& params, bool own_only = false);

// The message of type P among `params` (any range of google.protobuf.Any: a vector, or a spec's
// repeated method_params), or P's defaults when there is none.
template <typename P, typename AnyRange>
absl::StatusOr<P> UnpackParams(const AnyRange& params) {
  P p;
  for (const google::protobuf::Any& any : params) {
    if (!any.Is<P>()) continue;
    if (!any.UnpackTo(&p)) {
      return absl::InvalidArgumentError(absl::StrCat("method_params: cannot decode ", P::descriptor()->full_name()));
    }
    break;
  }
  return p;
}

}  // namespace fgl::fl

#endif  // FGL_FL_METHOD_PARAMS_H_
