// Who gets into a run (issue #68): refusals that tell an unauthenticated caller nothing of the
// spec, and shard shapes that hold for their claimant only. The gRPC handlers are called directly;
// the streams' side (first-message deadline, cap) is experiments/transport_test.sh's `silent`.
#include "fl/transport/session_hub.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace fgl::fl::transport {
namespace {

constexpr char kFingerprint[] = "dataset: \"csbm:num_nodes=600\" clients: 3|seed=2024";

ServerOptions Options() {
  ServerOptions o;
  o.join_timeout_s = 0.3;  // the waits that must fail, fail fast
  return o;
}

std::map<int, std::string> Tokens() { return {{0, "t0"}, {1, "t1"}, {2, "t2"}}; }

grpc::Status Join(SessionHub& hub, int id, int64_t features, int64_t classes, const std::string& token,
                  const std::string& fingerprint = kFingerprint) {
  proto::JoinRequest req;
  req.set_client_id(id);
  req.set_token(token);
  req.set_run_fingerprint(fingerprint);
  req.set_num_clients(3);
  req.set_num_nodes(200);
  req.set_num_features(features);
  req.set_num_classes(classes);
  proto::JoinReply reply;
  return hub.Join(nullptr, &req, &reply);
}

TEST(SessionHub, RefusalsTellAnUnauthenticatedCallerNothingOfTheSpec) {
  SessionHub hub(3, kFingerprint, Options(), Tokens());
  grpc::Status s = Join(hub, 0, 7, 3, "", "guess");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message().find("csbm"), std::string::npos) << s.error_message();
  s = Join(hub, 9, 7, 3, "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().find("[0, 3)"), std::string::npos) << s.error_message();  // the client count
  // A token holder running another experiment is told the server's, to find the difference.
  s = Join(hub, 0, 7, 3, "t0", "another run");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("csbm"), std::string::npos) << s.error_message();
  EXPECT_EQ(hub.stats().refused_joins, 3);
}

TEST(SessionHub, ExpectedShapeRefusesAMismatchedClientAlone) {
  SessionHub hub(3, kFingerprint, Options(), Tokens());
  hub.ExpectShape(64, 5);
  // The takeover: made-up shapes for every id first. Each is refused; none fixes anything.
  for (int k = 0; k < 3; ++k) {
    grpc::Status s = Join(hub, k, 7, 3, absl::StrCat("t", k));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("inconsistent shard"), std::string::npos) << s.error_message();
  }
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(Join(hub, k, 64, 5, absl::StrCat("t", k)).ok()) << k;
  EXPECT_TRUE(hub.WaitForClients(0).ok());
  EXPECT_EQ(hub.FeaturesAndClasses(), std::make_pair(int64_t{64}, int64_t{5}));
  EXPECT_EQ(hub.ConnectedClients(), (std::vector<int>{0, 1, 2}));
}

TEST(SessionHub, FirstQuorumFixesTheShapeAndRefusesTheOddClientAlone) {
  SessionHub hub(3, kFingerprint, Options(), Tokens());
  ASSERT_TRUE(Join(hub, 2, 7, 3, "t2").ok());  // first, with a made-up shape: it holds for itself only
  ASSERT_TRUE(Join(hub, 0, 64, 5, "t0").ok());
  EXPECT_FALSE(hub.WaitForClients(2).ok());  // one each: no agreement yet
  ASSERT_TRUE(Join(hub, 1, 64, 5, "t1").ok());
  ASSERT_TRUE(hub.WaitForClients(2).ok());
  EXPECT_EQ(hub.FeaturesAndClasses(), std::make_pair(int64_t{64}, int64_t{5}));
  EXPECT_EQ(hub.ConnectedClients(), (std::vector<int>{0, 1}));
  EXPECT_EQ(hub.stats().refused_joins, 1);
  EXPECT_EQ(Join(hub, 2, 7, 3, "t2").error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(Join(hub, 2, 64, 5, "t2").ok());
  EXPECT_EQ(hub.ConnectedClients(), (std::vector<int>{0, 1, 2}));
}

TEST(SessionHub, ClientsThatDisagreeDoNotStartARun) {
  SessionHub hub(3, kFingerprint, Options(), Tokens());
  ASSERT_TRUE(Join(hub, 0, 64, 5, "t0").ok());
  ASSERT_TRUE(Join(hub, 1, 7, 3, "t1").ok());
  absl::Status s = hub.WaitForClients(2);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_NE(s.message().find("disagree"), absl::string_view::npos) << s;
  EXPECT_EQ(hub.FeaturesAndClasses(), std::make_pair(int64_t{0}, int64_t{0}));
}

}  // namespace
}  // namespace fgl::fl::transport
