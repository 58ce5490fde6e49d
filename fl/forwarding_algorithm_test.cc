// Each call of ForwardingClient/ForwardingServer reaches the wrapped algorithm, and every virtual
// of fl/algorithm.h is one of them (so a call added there cannot be silently dropped by a plug-in).
#include "fl/forwarding_algorithm.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::fl {
namespace {

using ::testing::UnorderedElementsAreArray;

class RecordingClient final : public ClientAlgorithm {
 public:
  explicit RecordingClient(std::vector<std::string>* calls) : calls_(calls) {}
  absl::StatusOr<std::optional<proto::Message>> Prepare() override { return Note("Prepare", proto::Message()); }
  absl::StatusOr<proto::Message> Train(const proto::Message&, const RoundInfo&) override {
    return Note("Train", proto::Message());
  }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message*) override { return Note("Predict", torch::ones({1})); }
  absl::StatusOr<torch::Tensor> PredictGraph(const ClientData&, const proto::Message*) override {
    return Note("PredictGraph", torch::ones({2}));
  }
  std::map<std::string, double> Reports() const override { return Note("Reports", std::map<std::string, double>{{"x", 1}}); }
  absl::StatusOr<proto::Message> SaveState() const override { return Note("SaveState", proto::Message()); }
  absl::Status RestoreState(const proto::Message&) override { return Note("RestoreState", absl::OkStatus()); }

 private:
  template <typename T>
  T Note(const std::string& call, T value) const {
    calls_->push_back(call);
    return value;
  }
  std::vector<std::string>* calls_;
};

class RecordingServer final : public ServerAlgorithm {
 public:
  explicit RecordingServer(std::vector<std::string>* calls) : calls_(calls) {}
  absl::Status AcceptPreparation(const proto::Message&) override { return Note("AcceptPreparation", absl::OkStatus()); }
  absl::Status FinishPreparation() override { return Note("FinishPreparation", absl::OkStatus()); }
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo&) override { return Note("Broadcast", proto::Message()); }
  bool PersonalisedBroadcast() const override { return Note("PersonalisedBroadcast", true); }
  absl::StatusOr<proto::Message> BroadcastTo(int, const RoundInfo&) override {
    return Note("BroadcastTo", proto::Message());
  }
  int ExchangesPerRound() const override { return Note("ExchangesPerRound", 3); }
  absl::Status Accumulate(const proto::Message&) override { return Note("Accumulate", absl::OkStatus()); }
  absl::Status FinishRound(const RoundInfo&) override { return Note("FinishRound", absl::OkStatus()); }
  absl::StatusOr<proto::Message> SaveState() const override { return Note("SaveState", proto::Message()); }
  absl::Status RestoreState(const proto::Message&) override { return Note("RestoreState", absl::OkStatus()); }
  std::vector<ServerAggregate> Aggregates() override { return Note("Aggregates", std::vector<ServerAggregate>(2)); }

 private:
  template <typename T>
  T Note(const std::string& call, T value) const {
    calls_->push_back(call);
    return value;
  }
  std::vector<std::string>* calls_;
};

// A plug-in that adds nothing.
class NoOpClient final : public ForwardingClient {
  using ForwardingClient::ForwardingClient;
};
class NoOpServer final : public ForwardingServer {
  using ForwardingServer::ForwardingServer;
};

// The virtual member functions declared in fl/algorithm.h (destructors aside).
std::vector<std::string> DeclaredVirtuals() {
  std::ifstream in("fl/algorithm.h");
  std::stringstream text;
  text << in.rdbuf();
  const std::string source = text.str();
  const std::regex virtual_call(R"(virtual\s+[^;{(~]*?\b(\w+)\s*\()");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), virtual_call); it != std::sregex_iterator(); ++it) {
    names.push_back((*it)[1]);
  }
  return names;
}

TEST(ForwardingAlgorithmTest, EveryCallReachesTheBase) {
  std::vector<std::string> calls;
  NoOpClient client(std::make_unique<RecordingClient>(&calls));
  ClientData data;
  EXPECT_TRUE(client.Prepare()->has_value());
  EXPECT_TRUE(client.Train(proto::Message(), RoundInfo()).ok());
  EXPECT_EQ(client.Predict(nullptr)->numel(), 1);
  EXPECT_EQ(client.PredictGraph(data, nullptr)->numel(), 2);
  EXPECT_EQ(client.Reports().size(), 1u);
  EXPECT_TRUE(client.SaveState().ok());
  EXPECT_TRUE(client.RestoreState(proto::Message()).ok());

  NoOpServer server(std::make_unique<RecordingServer>(&calls));
  EXPECT_TRUE(server.AcceptPreparation(proto::Message()).ok());
  EXPECT_TRUE(server.FinishPreparation().ok());
  EXPECT_TRUE(server.Broadcast(RoundInfo()).ok());
  EXPECT_TRUE(server.PersonalisedBroadcast());
  EXPECT_TRUE(server.BroadcastTo(1, RoundInfo()).ok());
  EXPECT_EQ(server.ExchangesPerRound(), 3);
  EXPECT_TRUE(server.Accumulate(proto::Message()).ok());
  EXPECT_TRUE(server.FinishRound(RoundInfo()).ok());
  EXPECT_TRUE(server.SaveState().ok());
  EXPECT_TRUE(server.RestoreState(proto::Message()).ok());
  EXPECT_EQ(server.Aggregates().size(), 2u);

  // Every virtual of the contract was called through the forwarding bases, and nothing else.
  const std::vector<std::string> declared = DeclaredVirtuals();
  ASSERT_GE(declared.size(), 18u) << "the parser of fl/algorithm.h found too few virtuals";
  EXPECT_THAT(calls, UnorderedElementsAreArray(declared));
}

}  // namespace
}  // namespace fgl::fl
