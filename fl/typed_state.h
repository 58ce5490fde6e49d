// A method's checkpoint state as its own typed message (e.g. FedTAD's FedTadServerState) inside the
// fl.proto.Message that SaveState returns (field `typed_state`), instead of tensors whose names
// encode what they are. Each type appears at most once per message, so a plug-in and the method it
// wraps each keep their own state in one message. Tensors inside such a state are fl.proto.Tensor
// (fl/tensor_codec.h EncodeTensor/DecodeTensor).
//
// Example (a server's SaveState/RestoreState):
//   FedTadServerState s;  ...  fl::PackState(s, &message);
//   FGL_ASSIGN_OR_RETURN(FedTadServerState s, fl::UnpackState<FedTadServerState>(state, "fedtad state"));
#ifndef FGL_FL_TYPED_STATE_H_
#define FGL_FL_TYPED_STATE_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fl/proto/message.pb.h"

namespace fgl::fl {

// Adds `state` to `message`'s typed state. CHECK-fails when `message` already holds a state of
// that type: two parts of one method claiming the same type is a bug, not input.
void PackStateMessage(const google::protobuf::Message& state, proto::Message* message);

// Fills `state` with the typed state of its type in `message`. InvalidArgument, prefixed by `who`
// (e.g. "fedtad state"), when the message holds none ("expected typed state fgl.x.S; the
// checkpoint holds none", or "...; the checkpoint holds fgl.y.T" naming what it does hold), holds
// it twice, or its bytes do not parse as that type.
absl::Status UnpackStateMessage(const proto::Message& message, absl::string_view who,
                                google::protobuf::Message* state);

// Removes the typed state of `type` from `message`, if any (a plug-in hands its base method the
// state without its own part).
void EraseState(const google::protobuf::Descriptor* type, proto::Message* message);

template <typename P>
void PackState(const P& state, proto::Message* message) {
  PackStateMessage(state, message);
}

template <typename P>
absl::StatusOr<P> UnpackState(const proto::Message& message, absl::string_view who) {
  P state;
  if (absl::Status s = UnpackStateMessage(message, who, &state); !s.ok()) return s;
  return state;
}

template <typename P>
void EraseState(proto::Message* message) {
  EraseState(P::descriptor(), message);
}

}  // namespace fgl::fl

#endif  // FGL_FL_TYPED_STATE_H_
