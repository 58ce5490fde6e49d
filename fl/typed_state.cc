#include "fl/typed_state.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace fgl::fl {
namespace {

// The full name an Any's type URL names (everything after its last '/').
absl::string_view TypeName(const google::protobuf::Any& any) {
  absl::string_view url = any.type_url();
  const size_t slash = url.rfind('/');
  return slash == absl::string_view::npos ? url : url.substr(slash + 1);
}

}  // namespace

void PackStateMessage(const google::protobuf::Message& state, proto::Message* message) {
  const std::string& type = state.GetDescriptor()->full_name();
  for (const google::protobuf::Any& any : message->typed_state()) {
    CHECK(TypeName(any) != type) << "typed state " << type << " packed twice into one message";
  }
  CHECK(message->add_typed_state()->PackFrom(state)) << "typed state " << type << " does not serialise";
}

absl::Status UnpackStateMessage(const proto::Message& message, absl::string_view who,
                                google::protobuf::Message* state) {
  const std::string& type = state->GetDescriptor()->full_name();
  const google::protobuf::Any* found = nullptr;
  std::vector<std::string> held;
  for (const google::protobuf::Any& any : message.typed_state()) {
    held.emplace_back(TypeName(any));
    if (TypeName(any) != type) continue;
    if (found != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": typed state ", type, " appears twice"));
    }
    found = &any;
  }
  if (found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": expected typed state ", type, "; the checkpoint holds ",
                                                   held.empty() ? "none" : absl::StrJoin(held, ", ")));
  }
  if (!found->UnpackTo(state)) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": typed state ", type, " does not parse"));
  }
  return absl::OkStatus();
}

void EraseState(const google::protobuf::Descriptor* type, proto::Message* message) {
  auto* states = message->mutable_typed_state();
  for (int i = states->size() - 1; i >= 0; --i) {
    if (TypeName(states->Get(i)) == type->full_name()) states->DeleteSubrange(i, 1);
  }
}

}  // namespace fgl::fl
