// ForwardingClient/ForwardingServer pass every required call to the wrapped algorithm and report
// exactly its capabilities; every virtual of fl/algorithm.h is one of them (so a call or
// capability added there cannot be silently dropped by a plug-in).
#include "fl/forwarding_algorithm.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::fl {
namespace {

using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

// Notes each call by name on a shared list.
class Recorder {
 protected:
  explicit Recorder(std::vector<std::string>* calls) : calls_(calls) {}
  template <typename T>
  T Note(const std::string& call, T value) const {
    calls_->push_back(call);
    return value;
  }

 private:
  std::vector<std::string>* calls_;
};

// A client with every capability.
class RecordingClient final : public ClientAlgorithm,
                              public PreparingClient,
                              public GraphScoringClient,
                              public ReportingClient,
                              Recorder {
 public:
  explicit RecordingClient(std::vector<std::string>* calls) : Recorder(calls) {}
  absl::StatusOr<proto::Message> Train(const proto::Message&, const RoundInfo&) override {
    return Note("Train", proto::Message());
  }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message*) override { return Note("Predict", torch::ones({1})); }
  absl::StatusOr<proto::Message> SaveState() const override { return Note("SaveState", proto::Message()); }
  absl::Status RestoreState(const proto::Message&) override { return Note("RestoreState", absl::OkStatus()); }

  PreparingClient* preparing() override { return Note<PreparingClient*>("preparing", this); }
  GraphScoringClient* graph_scoring() override { return Note<GraphScoringClient*>("graph_scoring", this); }
  const ReportingClient* reporting() const override { return Note<const ReportingClient*>("reporting", this); }

  absl::StatusOr<proto::Message> Prepare() override { return Note("Prepare", proto::Message()); }
  absl::StatusOr<torch::Tensor> PredictGraph(const ClientData&, const proto::Message*) override {
    return Note("PredictGraph", torch::ones({2}));
  }
  std::map<std::string, double> Reports() const override { return Note("Reports", std::map<std::string, double>{{"x", 1}}); }
};

// A server with every capability.
class RecordingServer final : public ServerAlgorithm,
                              public PreparedServer,
                              public PersonalisedServer,
                              public MultiExchangeServer,
                              public AggregateSource,
                              Recorder {
 public:
  explicit RecordingServer(std::vector<std::string>* calls) : Recorder(calls) {}
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo&) override { return Note("Broadcast", proto::Message()); }
  absl::Status Accumulate(const proto::Message&) override { return Note("Accumulate", absl::OkStatus()); }
  absl::Status FinishRound(const RoundInfo&) override { return Note("FinishRound", absl::OkStatus()); }
  absl::StatusOr<proto::Message> SaveState() const override { return Note("SaveState", proto::Message()); }
  absl::Status RestoreState(const proto::Message&) override { return Note("RestoreState", absl::OkStatus()); }

  PreparedServer* prepared() override { return Note<PreparedServer*>("prepared", this); }
  PersonalisedServer* personalised() override { return Note<PersonalisedServer*>("personalised", this); }
  const MultiExchangeServer* multi_exchange() const override {
    return Note<const MultiExchangeServer*>("multi_exchange", this);
  }
  AggregateSource* aggregate_source() override { return Note<AggregateSource*>("aggregate_source", this); }

  absl::Status AcceptPreparation(const proto::Message&) override { return Note("AcceptPreparation", absl::OkStatus()); }
  absl::Status FinishPreparation() override { return Note("FinishPreparation", absl::OkStatus()); }
  absl::StatusOr<proto::Message> BroadcastTo(int, const RoundInfo&) override {
    return Note("BroadcastTo", proto::Message());
  }
  int ExchangesPerRound() const override { return Note("ExchangesPerRound", 3); }
  std::vector<ServerAggregate> Aggregates() override { return Note("Aggregates", std::vector<ServerAggregate>(2)); }
};

// The required calls only.
class BareClient final : public ClientAlgorithm {
 public:
  absl::StatusOr<proto::Message> Train(const proto::Message&, const RoundInfo&) override { return proto::Message(); }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message*) override { return torch::ones({1}); }
  absl::StatusOr<proto::Message> SaveState() const override { return proto::Message(); }
  absl::Status RestoreState(const proto::Message&) override { return absl::OkStatus(); }
};
class BareServer final : public ServerAlgorithm {
 public:
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo&) override { return proto::Message(); }
  absl::Status Accumulate(const proto::Message&) override { return absl::OkStatus(); }
  absl::Status FinishRound(const RoundInfo&) override { return absl::OkStatus(); }
  absl::StatusOr<proto::Message> SaveState() const override { return proto::Message(); }
  absl::Status RestoreState(const proto::Message&) override { return absl::OkStatus(); }
};

// A plug-in that adds nothing.
class NoOpClient final : public ForwardingClient {
  using ForwardingClient::ForwardingClient;
};
class NoOpServer final : public ForwardingServer {
  using ForwardingServer::ForwardingServer;
};

// The virtual member functions declared in fl/algorithm.h (destructors aside): the required
// calls, the capability accessors and the capabilities' calls.
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

TEST(ForwardingAlgorithmTest, EveryCallAndCapabilityIsTheBases) {
  std::vector<std::string> calls;
  auto recording_client = std::make_unique<RecordingClient>(&calls);
  RecordingClient* const base_client = recording_client.get();
  NoOpClient client(std::move(recording_client));
  EXPECT_TRUE(client.Train(proto::Message(), RoundInfo()).ok());
  EXPECT_EQ(client.Predict(nullptr)->numel(), 1);
  EXPECT_TRUE(client.SaveState().ok());
  EXPECT_TRUE(client.RestoreState(proto::Message()).ok());
  // Each accessor returns the base's own interface, so its calls go straight into the base.
  PreparingClient* const preparing = client.preparing();
  EXPECT_EQ(preparing, static_cast<PreparingClient*>(base_client));
  EXPECT_TRUE(preparing->Prepare().ok());
  GraphScoringClient* const scoring = client.graph_scoring();
  EXPECT_EQ(scoring, static_cast<GraphScoringClient*>(base_client));
  ClientData data;
  EXPECT_EQ(scoring->PredictGraph(data, nullptr)->numel(), 2);
  const ReportingClient* const reporting = static_cast<const NoOpClient&>(client).reporting();
  EXPECT_EQ(reporting, static_cast<const ReportingClient*>(base_client));
  EXPECT_EQ(reporting->Reports().size(), 1u);

  auto recording_server = std::make_unique<RecordingServer>(&calls);
  RecordingServer* const base_server = recording_server.get();
  NoOpServer server(std::move(recording_server));
  EXPECT_TRUE(server.Broadcast(RoundInfo()).ok());
  EXPECT_TRUE(server.Accumulate(proto::Message()).ok());
  EXPECT_TRUE(server.FinishRound(RoundInfo()).ok());
  EXPECT_TRUE(server.SaveState().ok());
  EXPECT_TRUE(server.RestoreState(proto::Message()).ok());
  PreparedServer* const prepared = server.prepared();
  EXPECT_EQ(prepared, static_cast<PreparedServer*>(base_server));
  EXPECT_TRUE(prepared->AcceptPreparation(proto::Message()).ok());
  EXPECT_TRUE(prepared->FinishPreparation().ok());
  PersonalisedServer* const personalised = server.personalised();
  EXPECT_EQ(personalised, static_cast<PersonalisedServer*>(base_server));
  EXPECT_TRUE(personalised->BroadcastTo(1, RoundInfo()).ok());
  const MultiExchangeServer* const multi = static_cast<const NoOpServer&>(server).multi_exchange();
  EXPECT_EQ(multi, static_cast<const MultiExchangeServer*>(base_server));
  EXPECT_EQ(multi->ExchangesPerRound(), 3);
  AggregateSource* const source = server.aggregate_source();
  EXPECT_EQ(source, static_cast<AggregateSource*>(base_server));
  EXPECT_EQ(source->Aggregates().size(), 2u);

  // Every virtual of the contract was called once through the forwarding bases, and nothing else.
  const std::vector<std::string> declared = DeclaredVirtuals();
  ASSERT_GE(declared.size(), 24u) << "the parser of fl/algorithm.h found too few virtuals";
  EXPECT_THAT(calls, UnorderedElementsAreArray(declared));
}

TEST(ForwardingAlgorithmTest, NoCapabilityTheBaseLacks) {
  NoOpClient client(std::make_unique<BareClient>());
  EXPECT_EQ(client.preparing(), nullptr);
  EXPECT_EQ(client.graph_scoring(), nullptr);
  EXPECT_EQ(client.reporting(), nullptr);
  EXPECT_THAT(ReportsOf(client), IsEmpty());

  NoOpServer server(std::make_unique<BareServer>());
  EXPECT_EQ(server.prepared(), nullptr);
  EXPECT_EQ(server.personalised(), nullptr);
  EXPECT_EQ(server.multi_exchange(), nullptr);
  EXPECT_EQ(server.aggregate_source(), nullptr);
  EXPECT_EQ(ExchangesOf(server), 1);
  EXPECT_THAT(AggregatesOf(server), IsEmpty());
}

}  // namespace
}  // namespace fgl::fl
