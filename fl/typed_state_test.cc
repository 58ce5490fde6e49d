// Typed checkpoint state: a round trip beside another type and beside named tensors, and refusal
// of a checkpoint holding the wrong type, none, the same type twice, or bytes that do not parse.
// fl.proto.Tensor and fl.proto.Header stand in for two methods' state messages.
#include "fl/typed_state.h"

#include <torch/torch.h>

#include "fl/tensor_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::fl {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::_;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(TypedStateTest, RoundTripsBesideAnotherTypeAndNamedTensors) {
  proto::Message m;
  AddTensors({{"base.weight", torch::ones({2})}}, &m);  // a base method's untyped state
  PackState(EncodeTensor("phi", torch::tensor({0.25f, 0.75f})), &m);
  proto::Header header;
  header.set_sender(3);
  PackState(header, &m);
  ASSERT_EQ(m.typed_state_size(), 2);

  ASSERT_OK_AND_ASSIGN(const proto::Tensor tensor, UnpackState<proto::Tensor>(m, "test state"));
  ASSERT_OK_AND_ASSIGN(const torch::Tensor phi, DecodeTensor(tensor));
  EXPECT_TRUE(torch::equal(phi, torch::tensor({0.25f, 0.75f})));
  ASSERT_OK_AND_ASSIGN(const proto::Header h, UnpackState<proto::Header>(m, "test state"));
  EXPECT_EQ(h.sender(), 3);
  EXPECT_EQ(m.tensors_size(), 1);  // the named tensors are untouched

  // What a plug-in hands its base method: everything but its own typed state.
  EraseState<proto::Tensor>(&m);
  EXPECT_EQ(m.typed_state_size(), 1);
  EXPECT_THAT(UnpackState<proto::Tensor>(m, "test state"), StatusIs(absl::StatusCode::kInvalidArgument, _));
  EXPECT_OK(UnpackState<proto::Header>(m, "test state").status());
}

TEST(TypedStateTest, WrongTypeIsRefusedNamingBothTypes) {
  proto::Message m;
  PackState(proto::Header(), &m);
  EXPECT_THAT(UnpackState<proto::Tensor>(m, "fedtad state"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("fedtad state"), HasSubstr("expected typed state fgl.fl.proto.Tensor"),
                             HasSubstr("holds fgl.fl.proto.Header"))));
}

TEST(TypedStateTest, MissingStateIsRefused) {
  proto::Message m;
  AddTensors({{"fedtad.reliability.0", torch::ones({3})}}, &m);  // a checkpoint of the old layout
  EXPECT_THAT(UnpackState<proto::Tensor>(m, "fedtad state"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("fedtad state: expected typed state fgl.fl.proto.Tensor"),
                             HasSubstr("holds none"))));
}

TEST(TypedStateTest, DuplicateOrUnparsableStateIsRefused) {
  proto::Message twice;
  twice.add_typed_state()->PackFrom(proto::Header());
  twice.add_typed_state()->PackFrom(proto::Header());
  EXPECT_THAT(UnpackState<proto::Header>(twice, "s"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fgl.fl.proto.Header appears twice")));

  proto::Message garbled;
  google::protobuf::Any* any = garbled.add_typed_state();
  any->PackFrom(proto::Header());
  any->set_value("\xff\xff\xff");  // not a Header's wire format
  EXPECT_THAT(UnpackState<proto::Header>(garbled, "s"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fgl.fl.proto.Header does not parse")));
}

TEST(TypedStateDeathTest, PackingOneTypeTwiceIsABug) {
  proto::Message m;
  PackState(proto::Header(), &m);
  EXPECT_DEATH(PackState(proto::Header(), &m), "fgl.fl.proto.Header packed twice");
}

}  // namespace
}  // namespace fgl::fl
