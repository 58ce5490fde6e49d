// The simulator (fl::RunFederation) end to end with real methods on the synthetic csbm graph:
// byte counts, determinism across thread counts, centralised training, client sampling,
// checkpoint and resume, architectures sharing a head, the preparation hook, failing clients.
// It lives here, not in fl, because it runs methods: arrows point from methods to fl.
#include <cmath>

#include "fl/algorithm.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "graph/csbm.h"
#include "graph/split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::fl {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

FederationOptions Small(const std::string& method) {
  FederationOptions o;
  o.spec.set_dataset("csbm:num_nodes=600,num_classes=4,num_features=16,homophily=0.85");
  o.spec.set_partitioner("louvain");
  o.spec.set_clients(4);
  o.spec.set_method(method);
  o.spec.set_rounds(8);
  o.spec.set_local_epochs(2);
  o.cache_dir = "none";
  o.seed = 7;
  return o;
}

TEST(SimulatorTest, FedAvgLearnsAndCountsBytes) {
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r, RunFederation(Small("fedavg")));
  ASSERT_EQ(r.rounds_size(), 8);
  EXPECT_GT(r.result().test_acc(), 70.0);
  // GCN 16 -> 64 -> 4: 16*64 + 64 + 64*4 + 4 = 1348 float32 = 5392 bytes per model; each of the
  // 4 clients receives and sends one model per round (plus small headers).
  for (const proto::RoundRecord& rec : r.rounds()) {
    EXPECT_EQ(rec.participants(), 4);
    EXPECT_GE(rec.bytes_down(), 4 * 5392);
    EXPECT_LE(rec.bytes_down(), 4 * (5392 + 256));
    EXPECT_GE(rec.bytes_up(), 4 * 5392);
    EXPECT_LE(rec.bytes_up(), 4 * (5392 + 256));
  }
  ASSERT_OK_AND_ASSIGN(proto::FederationResult local, RunFederation(Small("local")));
  EXPECT_LT(local.result().bytes_up(), 4 * 8 * 64);  // headers only: nothing leaves a local client
}

// The whole-graph test beside the local one: the global model (FedAvg) and each client's own
// (Local) score the original graph's test nodes; local scores are unchanged by it.
TEST(SimulatorTest, WholeGraphTestIsScoredBesideTheLocalTest) {
  for (const char* method : {"fedavg", "local"}) {
    FederationOptions o = Small(method);
    ASSERT_OK_AND_ASSIGN(proto::FederationResult plain, RunFederation(o));
    EXPECT_FALSE(plain.result().has_global_test_acc());
    o.spec.mutable_eval()->set_global_test(fl::proto::EvalProtocol::WHOLE_GRAPH);
    ASSERT_OK_AND_ASSIGN(proto::FederationResult whole, RunFederation(o));
    ASSERT_EQ(whole.rounds_size(), plain.rounds_size());
    for (int r = 0; r < whole.rounds_size(); ++r) {
      EXPECT_EQ(whole.rounds(r).test_acc(), plain.rounds(r).test_acc()) << method << r;
      EXPECT_TRUE(whole.rounds(r).has_global_test_acc()) << method << r;
    }
    // 4 classes: the global model learned the whole graph. Local models, each trained on one
    // label-skewed community, score near chance there (~31%): what LocSage's protocol measures.
    if (std::string(method) == "fedavg") {
      EXPECT_GT(whole.result().global_test_acc(), 50.0);
    }
  }
}

TEST(SimulatorTest, SameSeedSameNumbersOnAnyThreadCount) {
  FederationOptions o = Small("fedprox");
  o.threads = 1;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult a, RunFederation(o));
  o.threads = 2;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult b, RunFederation(o));
  ASSERT_EQ(a.rounds_size(), b.rounds_size());
  for (int i = 0; i < a.rounds_size(); ++i) {
    EXPECT_EQ(a.rounds(i).val_acc(), b.rounds(i).val_acc()) << "round " << i + 1;
    EXPECT_EQ(a.rounds(i).test_acc(), b.rounds(i).test_acc()) << "round " << i + 1;
  }
  o.seed = 8;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult c, RunFederation(o));
  bool differs = false;
  for (int i = 0; i < a.rounds_size(); ++i) differs |= a.rounds(i).test_acc() != c.rounds(i).test_acc();
  EXPECT_TRUE(differs);
}

TEST(SimulatorTest, CentralizedAndClientFractionAndErrors) {
  FederationOptions o = Small("fedavg");
  o.spec.set_centralized(true);
  ASSERT_OK_AND_ASSIGN(proto::FederationResult c, RunFederation(o));
  EXPECT_THAT(c.result().client_sizes(), ::testing::ElementsAre(600));
  o.spec.set_method("fedprox");  // reads the partition's clients: refused, not run on one
  EXPECT_THAT(RunFederation(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("only fedavg")));
  o = Small("fedavg");
  o.spec.set_client_fraction(0.5);
  ASSERT_OK_AND_ASSIGN(proto::FederationResult half, RunFederation(o));
  for (const proto::RoundRecord& rec : half.rounds()) EXPECT_EQ(rec.participants(), 2);
  o.spec.set_method("fedavgg");
  EXPECT_THAT(RunFederation(o), StatusIs(absl::StatusCode::kNotFound, HasSubstr("fedavgg")));
}

TEST(SimulatorTest, ResumedRunEqualsUninterruptedRun) {
  for (const std::string method : {"fedavg", "fedprox", "local"}) {
    FederationOptions o = Small(method);
    o.spec.mutable_eval()->set_dropout_at_eval(true);  // the evaluation's randomness must resume too
    ASSERT_OK_AND_ASSIGN(proto::FederationResult whole, RunFederation(o));
    const std::string dir = std::string(::testing::TempDir()) + "/ckpt_" + method;
    ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
    o.checkpoint_dir = dir;
    o.checkpoint_every = 3;
    o.spec.set_rounds(5);  // "interrupted" after round 5; the last checkpoint is round 3
    ASSERT_OK(RunFederation(o).status());
    o.spec.set_rounds(8);
    o.resume = true;
    ASSERT_OK_AND_ASSIGN(proto::FederationResult resumed, RunFederation(o));
    ASSERT_EQ(resumed.rounds_size(), whole.rounds_size()) << method;
    for (int i = 0; i < whole.rounds_size(); ++i) {
      EXPECT_EQ(resumed.rounds(i).val_acc(), whole.rounds(i).val_acc()) << method << " round " << i + 1;
      EXPECT_EQ(resumed.rounds(i).test_acc(), whole.rounds(i).test_acc()) << method << " round " << i + 1;
      EXPECT_EQ(resumed.rounds(i).bytes_up(), whole.rounds(i).bytes_up()) << method;
    }
    // A checkpoint of a different run is refused.
    o.spec.set_lr(0.02);
    EXPECT_THAT(RunFederation(o), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("different run")));
  }
}

TEST(SimulatorTest, DifferentArchitecturesShareOnlyAHead) {
  FederationOptions o = Small("fedavg");
  o.spec.set_clients(2);
  o.spec.set_model("gcn:layers=2,jk=max;sage:layers=2,jk=max");  // both end in a Linear(64 -> 4) head
  o.spec.set_shared_group("head");
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r, RunFederation(o));
  // Only head.weight [64, 4] and head.bias [4] travel: 260 floats = 1040 bytes per message.
  for (const proto::RoundRecord& rec : r.rounds()) {
    EXPECT_GE(rec.bytes_down(), 2 * 1040);
    EXPECT_LE(rec.bytes_down(), 2 * (1040 + 128));
  }
  EXPECT_GT(r.result().test_acc(), 60.0);
  // Bodies of different shapes cannot be averaged: sharing everything is refused, not mixed up.
  o.spec.set_shared_group("");
  EXPECT_FALSE(RunFederation(o).ok());
}

TEST(FedAvgTest, IdenticalClientsGiveTheCentralisedUpdate) {
  // Two clients holding the same data, starting from the same global model with the same dropout
  // stream: their node-weighted mean must equal one client's own update.
  graph::CsbmOptions co;
  co.num_nodes = 300;
  co.num_features = 8;
  co.num_classes = 3;
  graph::Dataset d = *graph::MakeCsbm(co, 1);
  graph::NodeSplit split = *graph::ClassStratifiedSplit(d.labels, 3, 0.2, 0.4, 1);
  auto data = std::make_shared<ClientData>();
  data->data = d;
  data->split = split;
  data->view = std::make_shared<nn::GraphView>(*nn::GraphView::Create(d.graph));
  data->features = std::make_shared<nn::NodeFeatures>(d.features);
  data->labels = d.labels;
  MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.spec.set_local_epochs(2);
  config.seed = 5;
  ASSERT_OK_AND_ASSIGN(MethodFactories fedavg, FindMethod("fedavg"));
  ASSERT_OK_AND_ASSIGN(auto server, fedavg.server(config));
  ASSERT_OK_AND_ASSIGN(auto a, fedavg.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto b, fedavg.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto alone, fedavg.client(data, config));
  const RoundInfo round{1, 99};
  ASSERT_OK_AND_ASSIGN(proto::Message global, server->Broadcast(round));
  ASSERT_OK_AND_ASSIGN(proto::Message ra, a->Train(global, round));
  ASSERT_OK_AND_ASSIGN(proto::Message rb, b->Train(global, round));
  ASSERT_OK_AND_ASSIGN(proto::Message ralone, alone->Train(global, round));
  ASSERT_OK(server->Accumulate(ra));
  ASSERT_OK(server->Accumulate(rb));
  ASSERT_OK(server->FinishRound(round));
  ASSERT_OK_AND_ASSIGN(proto::Message averaged, server->Broadcast(round));
  ASSERT_OK_AND_ASSIGN(auto got, DecodeTensors(averaged));
  ASSERT_OK_AND_ASSIGN(auto want, DecodeTensors(ralone));
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) EXPECT_TRUE(torch::allclose(got.at(name), t, 1e-6, 1e-7)) << name;
  // A reply with a wrong shape is refused before anything is used.
  proto::Message bad = ralone;
  bad.mutable_tensors(0)->add_shape(1);
  EXPECT_FALSE(server->Accumulate(bad).ok());
}

// FedAvg whose client 1 always replies NaN weights: the server must leave it out of every round
// and the global model must stay finite.
class NanClient final : public ClientAlgorithm {
 public:
  NanClient(std::shared_ptr<const ClientData> data, std::unique_ptr<LocalModel> model)
      : data_(std::move(data)), model_(std::move(model)) {}
  absl::StatusOr<proto::Message> Train(const proto::Message& global, const RoundInfo& round) override {
    absl::Status s = LoadTensors(global, model_->Parameters());
    if (!s.ok()) return s;
    s = model_->Train(1, round.seed);
    if (!s.ok()) return s;
    NamedTensors params = model_->Parameters();
    if (data_->id == 1) {
      for (auto& [name, t] : params) t = torch::full_like(t, NAN);
    }
    return ModelReply(params, data_->data.num_nodes(), data_->id, round, "nan.weights");
  }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message* global) override {
    return model_->Predict(global);
  }
  absl::StatusOr<proto::Message> SaveState() const override { return model_->SaveState(); }
  absl::Status RestoreState(const proto::Message& s) override { return model_->RestoreState(s); }

 private:
  std::shared_ptr<const ClientData> data_;
  std::unique_ptr<LocalModel> model_;
};

FGL_REGISTER_METHOD(
    "test_nan",
    [](std::shared_ptr<const ClientData> data, const MethodConfig& config)
        -> absl::StatusOr<std::unique_ptr<ClientAlgorithm>> {
      auto model = LocalModel::Create(data, config, config.seed);
      if (!model.ok()) return model.status();
      return std::unique_ptr<ClientAlgorithm>(new NanClient(data, *std::move(model)));
    },
    [](const MethodConfig& config) { return MakeModelAverageServer(config, "nan.weights"); });

// FedAvg whose clients upload their node count once before round 1; the server refuses to start
// unless all four arrived.
class NodeCountClient final : public ClientAlgorithm, public PreparingClient {
 public:
  NodeCountClient(std::shared_ptr<const ClientData> data, std::unique_ptr<ClientAlgorithm> inner)
      : data_(std::move(data)), inner_(std::move(inner)) {}
  PreparingClient* preparing() override { return this; }
  absl::StatusOr<proto::Message> Prepare() override {
    proto::Message m;
    m.mutable_header()->set_sender(data_->id);
    (*m.mutable_scalars())["num_nodes"] = static_cast<double>(data_->data.num_nodes());
    return m;
  }
  absl::StatusOr<proto::Message> Train(const proto::Message& g, const RoundInfo& r) override { return inner_->Train(g, r); }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message* g) override { return inner_->Predict(g); }
  absl::StatusOr<proto::Message> SaveState() const override { return inner_->SaveState(); }
  absl::Status RestoreState(const proto::Message& s) override { return inner_->RestoreState(s); }

 private:
  std::shared_ptr<const ClientData> data_;
  std::unique_ptr<ClientAlgorithm> inner_;
};

class NodeCountServer final : public ServerAlgorithm, public PreparedServer {
 public:
  explicit NodeCountServer(std::unique_ptr<ServerAlgorithm> inner) : inner_(std::move(inner)) {}
  PreparedServer* prepared() override { return this; }
  absl::Status AcceptPreparation(const proto::Message& m) override {
    total_ += m.scalars().at("num_nodes");
    ++count_;
    return absl::OkStatus();
  }
  absl::Status FinishPreparation() override {
    if (count_ != 4 || total_ != 600) return absl::FailedPreconditionError("missing preparation");
    return absl::OkStatus();
  }
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& r) override { return inner_->Broadcast(r); }
  absl::Status Accumulate(const proto::Message& m) override { return inner_->Accumulate(m); }
  absl::Status FinishRound(const RoundInfo& r) override {
    if (count_ != 4) return absl::FailedPreconditionError("round before preparation");
    return inner_->FinishRound(r);
  }
  absl::StatusOr<proto::Message> SaveState() const override { return inner_->SaveState(); }
  absl::Status RestoreState(const proto::Message& s) override { return inner_->RestoreState(s); }

 private:
  std::unique_ptr<ServerAlgorithm> inner_;
  int count_ = 0;
  double total_ = 0;
};

FGL_REGISTER_METHOD(
    "test_prepare",
    [](std::shared_ptr<const ClientData> data, const MethodConfig& config)
        -> absl::StatusOr<std::unique_ptr<ClientAlgorithm>> {
      auto inner = FindMethod("fedavg")->client(data, config);
      if (!inner.ok()) return inner.status();
      return std::unique_ptr<ClientAlgorithm>(new NodeCountClient(data, *std::move(inner)));
    },
    [](const MethodConfig& config) -> absl::StatusOr<std::unique_ptr<ServerAlgorithm>> {
      auto inner = FindMethod("fedavg")->server(config);
      if (!inner.ok()) return inner.status();
      return std::unique_ptr<ServerAlgorithm>(new NodeCountServer(*std::move(inner)));
    });

TEST(SimulatorTest, PreparationHookRunsOnceBeforeRoundOneAndPerClientRecords) {
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r, RunFederation(Small("test_prepare")));
  EXPECT_GT(r.result().preparation_bytes_up(), 0);
  ASSERT_EQ(r.rounds(0).clients_size(), 4);
  for (const proto::ClientRoundRecord& c : r.rounds(0).clients()) {
    EXPECT_TRUE(c.participated());
    EXPECT_TRUE(c.has_train_loss() && std::isfinite(c.train_loss()));
    EXPECT_GT(c.bytes_up(), 5392);
  }
  // Methods without a preparation step send nothing before round 1.
  ASSERT_OK_AND_ASSIGN(proto::FederationResult plain, RunFederation(Small("fedavg")));
  EXPECT_EQ(plain.result().preparation_bytes_up(), 0);
}

TEST(SimulatorTest, NanClientIsLeftOutAndStrictMakesItFatal) {
  FederationOptions o = Small("test_nan");
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r, RunFederation(o));
  for (const proto::RoundRecord& rec : r.rounds()) {
    EXPECT_EQ(rec.participants(), 3);
    EXPECT_EQ(rec.failed_clients(), 1);
  }
  EXPECT_GT(r.result().test_acc(), 60.0);  // the global model never absorbed the NaNs
  o.strict = true;
  EXPECT_THAT(RunFederation(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not finite")));
}

// A run whose every client is left out in every round (lr 1e300 overflows float) trained
// nothing: it ends with that cause instead of reporting the untrained model's accuracy.
TEST(SimulatorTest, RunWithNoAcceptedUpdateIsAnError) {
  FederationOptions o = Small("fedavg");
  o.spec.set_rounds(2);
  o.spec.set_lr(1e300);
  const absl::StatusOr<proto::FederationResult> r = RunFederation(o);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no client's update was accepted")));
  EXPECT_THAT(r.status().message(), HasSubstr("round 1, client 0: INTERNAL: round 1: client 0 training: value cannot"));
}

}  // namespace
}  // namespace fgl::fl
