// Resolving a FederationSpec (fl/proto/federation.proto): defaults from field presence, never
// from zero, and every value checked before anything runs. Errors name the field and the value.
#ifndef FGL_FL_FEDERATION_SPEC_H_
#define FGL_FL_FEDERATION_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/proto/federation.pb.h"
#include "fl/registry.h"

namespace fgl::fl {

// Fills every absent field with its documented default and checks ranges and finiteness.
// `where` (a file, "flags", ...) prefixes errors. The method name is not looked up here: see
// CheckMethod.
absl::StatusOr<proto::FederationSpec> ResolveFederationSpec(proto::FederationSpec spec,
                                                            const std::string& where);

// Looks the method up in the registry and checks its typed parameters (types, finiteness,
// ranges).
absl::StatusOr<MethodFactories> CheckMethod(const proto::FederationSpec& spec);

// The spec's method parameters as a vector (what MethodConfig carries).
std::vector<google::protobuf::Any> MethodParamsOf(const proto::FederationSpec& spec);

}  // namespace fgl::fl

#endif  // FGL_FL_FEDERATION_SPEC_H_
