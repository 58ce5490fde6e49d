// Runtime unit tests: codec, aggregation, and the federation driver against a scripted channel.
// The simulator end to end with real methods is tested in methods/simulator_test.cc.
#include <ATen/Parallel.h>

#include <set>

#include <google/protobuf/text_format.h>

#include "fl/aggregate/weighted_mean.h"
#include "fl/checkpoint_file.h"
#include "fl/evaluation.h"
#include "fl/federated_data.h"
#include "fl/federation.h"
#include "fl/federation_driver.h"
#include "fl/federation_spec.h"
#include "fl/round_records.h"
#include "fl/run_setup.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "fl/testing/majority_method.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::fl {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

TEST(TensorCodecTest, RoundTripAndShapeCheck) {
  torch::Tensor t = torch::arange(6, torch::kFloat32).view({2, 3});
  proto::Tensor p = EncodeTensor("w", t);
  EXPECT_EQ(p.data().size(), 24u);
  ASSERT_OK_AND_ASSIGN(torch::Tensor back, DecodeTensor(p));
  EXPECT_TRUE(torch::equal(back, t));
  p.add_shape(2);  // now claims [2, 3, 2]: 48 bytes expected, 24 present
  EXPECT_THAT(DecodeTensor(p), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("24 bytes")));
  proto::Tensor neg = EncodeTensor("n", t);
  neg.set_shape(0, -2);
  EXPECT_THAT(DecodeTensor(neg), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad shape")));
}


TEST(TensorCodecTest, LoadTensorsIsAllOrNothing) {
  torch::Tensor a = torch::zeros({2, 3});
  torch::Tensor b = torch::zeros({4}, torch::kFloat64);
  const NamedTensors targets = {{"a", a}, {"b", b}};
  proto::Message m;
  AddTensors({{"a", torch::arange(6, torch::kFloat32).view({2, 3})},
              {"b", torch::tensor({1.0, 2.0, std::nan(""), 4.0}, torch::kFloat64)}},
             &m);
  EXPECT_THAT(LoadTensors(m, targets), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'b' has NaN")));
  EXPECT_EQ(a.abs().sum().item<float>(), 0.0f);  // 'a' was fine but is untouched
  *m.mutable_tensors(1) = EncodeTensor("b", torch::tensor({1.0, 2.0, 3.0, 4.0}, torch::kFloat64));
  ASSERT_OK(LoadTensors(m, targets));
  EXPECT_TRUE(torch::equal(a, torch::arange(6, torch::kFloat32).view({2, 3})));
  EXPECT_EQ(b[2].item<double>(), 3.0);
  *m.add_tensors() = EncodeTensor("a", a);
  EXPECT_THAT(LoadTensors(m, targets), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("twice")));
  m.mutable_tensors()->RemoveLast();
  m.mutable_tensors(0)->add_shape(2);
  EXPECT_THAT(LoadTensors(m, targets), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bytes for shape")));
  EXPECT_TRUE(AllFinite(torch::ones({3})));
  EXPECT_FALSE(AllFinite(torch::tensor({1.0, -std::numeric_limits<double>::infinity()}, torch::kFloat64)));
  EXPECT_FALSE(AllFinite(torch::tensor({NAN, 1.0f}).expand({2, 2})));  // non-contiguous path
  EXPECT_TRUE(AllFinite(torch::arange(5)));
}
TEST(WeightedMeanTest, WeightsNodesAndRejectsNaN) {
  WeightedMean mean;
  ASSERT_OK(mean.Accumulate({{"w", torch::tensor({1.0f, 2.0f})}}, 1.0));
  ASSERT_OK(mean.Accumulate({{"w", torch::tensor({4.0f, 8.0f})}}, 3.0));
  EXPECT_THAT(mean.Accumulate({{"w", torch::tensor({NAN, 0.0f})}}, 1.0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not finite")));
  EXPECT_THAT(mean.Accumulate({{"v", torch::tensor({1.0f, 1.0f})}}, 1.0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected tensor 'v'")));
  ASSERT_OK_AND_ASSIGN(auto out, std::move(mean).Report());
  // (1*1 + 3*4)/4 = 3.25, (1*2 + 3*8)/4 = 6.5.
  EXPECT_TRUE(torch::allclose(out["w"], torch::tensor({3.25f, 6.5f})));
}

// The one-pass float32 path must round exactly like the tensor expression it replaced, and the
// bit-level finiteness check must catch +-Inf and NaN anywhere.
TEST(WeightedMeanTest, FusedPathIsBitIdenticalToTensorOps) {
  torch::manual_seed(3);
  const std::vector<double> weights = {17.0, 3.5, 1.0 / 3.0, 250.0};
  std::vector<torch::Tensor> parts;
  WeightedMean mean;
  torch::Tensor sum;
  double total = 0;
  for (double w : weights) {
    torch::Tensor t = torch::randn({37, 11}) * 100;
    parts.push_back(t);
    ASSERT_OK(mean.Accumulate({{"w", t}}, w));
    torch::Tensor c = t.to(torch::kFloat64) * w;
    sum = sum.defined() ? sum.add_(c) : c;
    total += w;
  }
  ASSERT_OK_AND_ASSIGN(auto out, std::move(mean).Report());
  EXPECT_TRUE(torch::equal(out["w"], (sum / total).to(torch::kFloat32)));
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    WeightedMean m;
    torch::Tensor t = torch::ones({5, 7});
    t[4][6] = bad;
    EXPECT_THAT(m.Accumulate({{"w", t}}, 1.0), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not finite")));
  }
  // Non-contiguous and float64 contributions take the general path and still add up.
  WeightedMean mixed;
  ASSERT_OK(mixed.Accumulate({{"w", parts[0].t()}}, 1.0));
  ASSERT_OK(mixed.Accumulate({{"w", parts[1].t().contiguous()}}, 1.0));
  ASSERT_OK_AND_ASSIGN(auto mixed_out, std::move(mixed).Report());
  EXPECT_TRUE(torch::allclose(mixed_out["w"], (parts[0].t() + parts[1].t()) / 2));
}

// A server whose "model" is the number of replies it has taken: enough to see what the driver
// sends, when, and what it does with answers.
class CountingServer final : public ServerAlgorithm {
 public:
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) override {
    proto::Message m;
    m.mutable_header()->set_round(round.round);
    (*m.mutable_scalars())["replies"] = replies_;
    return m;
  }
  absl::Status Accumulate(const proto::Message& reply) override {
    if (reply.scalars().count("bad")) return absl::InvalidArgumentError("bad reply");
    ++replies_;
    return absl::OkStatus();
  }
  absl::Status FinishRound(const RoundInfo&) override { return absl::OkStatus(); }
  absl::StatusOr<proto::Message> SaveState() const override { return proto::Message(); }
  absl::Status RestoreState(const proto::Message&) override { return absl::OkStatus(); }

 private:
  int replies_ = 0;
};

// Clients that answer as the test says. Client k has 10 (k + 1) nodes, 10 val and 10 test nodes;
// it gets `correct[k]` of each right.
class ScriptedChannel final : public ClientChannel {
 public:
  explicit ScriptedChannel(int n) : correct(n, 5) {}
  int num_clients() const override { return static_cast<int>(correct.size()); }
  std::vector<int> Reachable() override {
    std::vector<int> ids;
    for (int k = 0; k < num_clients(); ++k) {
      if (!unreachable.count(k)) ids.push_back(k);
    }
    return ids;
  }
  void Exchange(const std::map<int, ClientTask>& tasks,
                const std::function<void(int, ClientAnswer&)>& on_answer) override {
    seen.push_back(tasks);
    for (const auto& [k, t] : tasks) {
      ClientAnswer a;
      a.status = absl::OkStatus();
      if (t.eval_round > 0) {
        if (failing_eval.count(k)) {
          a.eval = absl::InternalError("Predict threw");
        } else {
          proto::EvalCounts c;
          c.set_val_correct(correct[k]);
          c.set_val_n(10);
          c.set_test_correct(correct[k]);
          c.set_test_n(10);
          c.set_num_nodes(10 * (k + 1));
          // Client k's mean test loss is (k + 1) × the round's.
          if (t.eval_round <= static_cast<int>(loss.size())) c.set_test_loss_sum(10 * (k + 1) * loss[t.eval_round - 1]);
          a.eval = std::move(c);
        }
      }
      if (t.kind == ClientTask::Kind::kPrepare && prepares) a.reply.emplace();
      if (t.kind == ClientTask::Kind::kTrain) {
        a.reply.emplace();
        if (bad_reply.count(k)) (*a.reply->mutable_scalars())["bad"] = 1;
        a.bytes_down = t.message.size();
      }
      if (unreachable.count(k)) a = ClientAnswer{absl::UnavailableError("gone")};
      on_answer(k, a);
    }
  }

  std::vector<int64_t> correct;
  std::vector<double> loss;  // per evaluated round, from round 1
  std::set<int> unreachable, failing_eval, bad_reply;
  bool prepares = false;  // every client sends a preparation message
  std::vector<std::map<int, ClientTask>> seen;
};

// A run of the scripted channel's two clients; the method is only named (the test gives the server).
FederationOptions DriverRun(int rounds) {
  FederationOptions o;
  o.spec.set_rounds(rounds);
  o.spec.set_clients(2);
  o.spec.set_method(testing::kMajorityMethod);
  o.spec.set_partitioner("louvain");
  o.spec.set_client_fraction(1.0);
  o.spec.set_dataset("cora");  // never loaded: the channel is scripted
  return o;
}

// `o` resolved, as DriveFederation takes it.
ResolvedOptions Resolved(FederationOptions o) {
  absl::StatusOr<ResolvedOptions> resolved = ResolveOptions(std::move(o));
  CHECK(resolved.ok()) << resolved.status();
  return *std::move(resolved);
}

TEST(FederationDriverTest, EvaluationRidesOnTheNextRoundsTasks) {
  CountingServer server;
  ScriptedChannel channel(2);
  channel.correct = {5, 8};
  std::vector<int> reported;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r,
                       DriveFederation(Resolved(DriverRun(3)), server, channel, {[&](const proto::RoundRecord& rec) {
                                         reported.push_back(rec.round());
                                       }}));
  // Preparation, rounds 1-3, then the last round's evaluation on its own.
  ASSERT_EQ(channel.seen.size(), 5u);
  EXPECT_EQ(channel.seen[0].at(0).kind, ClientTask::Kind::kPrepare);
  EXPECT_EQ(channel.seen[1].at(0).eval_round, 0);
  for (int r = 2; r <= 3; ++r) {
    const ClientTask& t = channel.seen[r].at(1);
    EXPECT_EQ(t.kind, ClientTask::Kind::kTrain);
    EXPECT_EQ(t.round, r);
    EXPECT_EQ(t.eval_round, r - 1);
    // The model scored is the server's after round r - 1: two replies per round so far.
    ASSERT_NE(t.eval_model.message, nullptr);
    EXPECT_EQ(t.eval_model.message->scalars().at("replies"), 2 * (r - 1));
  }
  EXPECT_EQ(channel.seen[4].at(0).kind, ClientTask::Kind::kEvaluate);
  EXPECT_EQ(channel.seen[4].at(0).eval_round, 3);
  EXPECT_EQ(reported, (std::vector<int>{1, 2, 3}));
  // Node-weighted: (10 * 50% + 20 * 80%) / 30.
  ASSERT_EQ(r.rounds_size(), 3);
  EXPECT_DOUBLE_EQ(r.rounds(0).test_acc(), 100.0 * (10 * 0.5 + 20 * 0.8) / 30);
  EXPECT_EQ(r.rounds(0).participants(), 2);
  EXPECT_THAT(r.result().client_sizes(), ::testing::ElementsAre(10, 20));
}

// FedEgo's code's rule: past round `after_round`, stop at the first round whose clients' mean test
// loss exceeds loss_ratio × the minimum so far; the next round's training is dropped unscored.
TEST(FederationDriverTest, EarlyStopEndsTheRunAtTheFirstRoundPastTheLossBound) {
  FederationOptions o = DriverRun(10);
  o.spec.mutable_eval()->mutable_early_stop()->set_after_round(3);
  o.spec.mutable_eval()->mutable_early_stop()->set_loss_ratio(1.3);
  CountingServer server;
  ScriptedChannel channel(2);
  // Round 3 is 1.5 × the minimum but not past round 3; round 5 is 1.31 × it.
  channel.loss = {2.0, 1.0, 1.5, 1.2, 1.31, 0.5, 0.5, 0.5, 0.5, 0.5};
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r, DriveFederation(Resolved(o), server, channel));
  ASSERT_EQ(r.rounds_size(), 5);
  ASSERT_TRUE(r.result().has_stopped_round());
  EXPECT_EQ(r.result().stopped_round(), 5);
  EXPECT_DOUBLE_EQ(r.rounds(4).test_loss(), 1.31 * 1.5);  // the mean of 1.31 and 2.62
  // Preparation, rounds 1-6 (round 6 carried round 5's evaluation), no evaluation of round 6.
  ASSERT_EQ(channel.seen.size(), 7u);
  EXPECT_EQ(channel.seen.back().at(0).round, 6);
  EXPECT_EQ(channel.seen.back().at(0).eval_round, 5);

  // A bound that is never crossed runs every round; so does a run without the rule.
  o.spec.mutable_eval()->mutable_early_stop()->set_loss_ratio(2.5);
  CountingServer server2;
  ScriptedChannel channel2(2);
  channel2.loss = channel.loss;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult full, DriveFederation(Resolved(o), server2, channel2));
  EXPECT_EQ(full.rounds_size(), 10);
  EXPECT_FALSE(full.result().has_stopped_round());
  o.spec.mutable_eval()->clear_early_stop();
  CountingServer server3;
  ScriptedChannel channel3(2);
  channel3.loss = channel.loss;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult without, DriveFederation(Resolved(o), server3, channel3));
  EXPECT_EQ(without.rounds_size(), 10);

  FederationOptions bad = testing::SmallFederation("testing_majority");
  bad.spec.mutable_eval()->mutable_early_stop()->set_loss_ratio(1.0);
  EXPECT_THAT(ResolveOptions(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("eval.early_stop.loss_ratio")));
}

// The scored model's logits, fixed.
class FixedLogits final : public ClientAlgorithm {
 public:
  explicit FixedLogits(torch::Tensor logits) : logits_(std::move(logits)) {}
  absl::StatusOr<proto::Message> Train(const proto::Message&, const RoundInfo&) override { return proto::Message(); }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message*) override { return logits_; }
  absl::StatusOr<proto::Message> SaveState() const override { return proto::Message(); }
  absl::Status RestoreState(const proto::Message&) override { return absl::OkStatus(); }

 private:
  torch::Tensor logits_;
};

// The early stop's loss: cross-entropy over the test nodes only, probabilities floored at 1e-7.
// The record helpers: a report is NaN for the clients that did not give it; traffic adds up by
// group; the reported round's global test is absent when that round has none, and under
// best_test the best over rounds that have one.
TEST(RoundRecordsTest, ReportsTrafficAndTheReportedRound) {
  proto::RoundRecord r = EmptyRoundRecord(1, 3);
  SetClientReport(r, 1, "lambda", 0.5);
  ASSERT_EQ(r.client_reports().at("lambda").values_size(), 3);
  EXPECT_TRUE(std::isnan(r.client_reports().at("lambda").values(0)));
  EXPECT_EQ(r.client_reports().at("lambda").values(1), 0.5);
  r.set_bytes_up(10);
  r.set_bytes_down(20);
  (*r.mutable_tensor_bytes_up())["phi"] = 8;
  proto::RunResult totals;
  AddRoundTraffic(r, totals);
  AddRoundTraffic(r, totals);
  EXPECT_EQ(totals.bytes_up(), 20);
  EXPECT_EQ(totals.bytes_down(), 40);
  EXPECT_EQ(totals.uploaded_tensor_bytes_by_group().at("phi"), 16);

  proto::FederationResult result;
  for (int round = 1; round <= 3; ++round) {
    proto::RoundRecord& rec = *result.add_rounds();
    rec.set_round(round);
    rec.set_val_acc(round == 2 ? 90 : 50);
    rec.set_test_acc(10.0 * round);
    if (round != 2) rec.set_global_test_acc(20.0 * round);
  }
  SelectReportedRound(proto::EvalProtocol::BEST_VAL, result);
  EXPECT_EQ(result.result().best_round(), 2);
  EXPECT_EQ(result.result().test_acc(), 20);
  EXPECT_FALSE(result.result().has_global_test_acc());  // round 2 has none
  SelectReportedRound(proto::EvalProtocol::BEST_TEST, result);
  EXPECT_EQ(result.result().best_round(), 3);
  EXPECT_EQ(result.result().global_test_acc(), 60);
}

TEST(EvaluateClientTest, TestLossIsTheFlooredCrossEntropyOverTestNodes) {
  std::shared_ptr<ClientData> client = testing::CsbmClient(60, 8, 3, 7);
  const int64_t n = client->labels.size(0);
  // Uniform on every node, except one test node certain of a wrong class.
  torch::Tensor logits = torch::zeros({n, 3});
  const torch::Tensor test = client->split.test.nonzero().flatten();
  ASSERT_GT(test.numel(), 1);
  const int64_t sure = test[0].item<int64_t>();
  logits[sure][(client->labels[sure].item<int64_t>() + 1) % 3] = 1000;
  FixedLogits algorithm(logits);
  ASSERT_OK_AND_ASSIGN(proto::EvalCounts c, EvaluateClient(algorithm, *client, nullptr, RoundInfo{}));
  EXPECT_EQ(c.test_n(), test.numel());
  EXPECT_NEAR(c.test_loss_sum(), (c.test_n() - 1) * -std::log(1.0 / 3 + 1e-7) - std::log(1e-7), 1e-3);
}

TEST(FederationDriverTest, UnreachableClientsAreLeftOutAndFailuresAreErrors) {
  CountingServer server;
  ScriptedChannel channel(2);
  channel.correct = {5, 8};
  channel.unreachable = {1};
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r, DriveFederation(Resolved(DriverRun(2)), server, channel));
  for (const proto::RoundRecord& rec : r.rounds()) {
    EXPECT_EQ(rec.participants(), 1);
    EXPECT_EQ(rec.failed_clients(), 1);
    EXPECT_DOUBLE_EQ(rec.test_acc(), 50.0);  // client 0 alone
  }
  // A client that is there but fails to evaluate stops the run: no accuracy over a subset.
  ScriptedChannel failing(2);
  failing.failing_eval = {1};
  CountingServer server2;
  EXPECT_THAT(DriveFederation(Resolved(DriverRun(2)), server2, failing),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("round 1: client 1 evaluation: Predict threw")));
}

TEST(FederationDriverTest, RejectedReplyIsLeftOutUnlessStrict) {
  ScriptedChannel channel(2);
  channel.bad_reply = {0};
  CountingServer server;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r, DriveFederation(Resolved(DriverRun(2)), server, channel));
  EXPECT_EQ(r.rounds(0).participants(), 1);
  EXPECT_FALSE(r.rounds(0).clients(0).participated());
  EXPECT_TRUE(r.rounds(0).clients(1).participated());
  FederationOptions strict = DriverRun(2);
  strict.strict = true;
  CountingServer server2;
  EXPECT_THAT(DriveFederation(Resolved(strict), server2, channel), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad reply")));
}

// A preparation message for a server without PreparedServer is refused by the driver.
TEST(FederationDriverTest, PreparationForAServerThatTakesNoneFails) {
  ScriptedChannel channel(2);
  channel.prepares = true;
  FederationOptions strict = DriverRun(1);
  strict.strict = true;
  CountingServer server;
  EXPECT_THAT(DriveFederation(Resolved(strict), server, channel),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("expects no preparation message")));
}

// The simulator end to end with fl's own fake method (methods/simulator_test.cc runs real ones).
FederationOptions Majority() { return testing::SmallFederation(testing::kMajorityMethod); }

TEST(SimulatorTest, RunsAMethodAndCountsItsBytes) {
  ASSERT_OK_AND_ASSIGN(proto::FederationResult r, RunFederation(Majority()));
  ASSERT_EQ(r.rounds_size(), 6);
  // Every node is predicted as one class of 4 balanced ones.
  EXPECT_GT(r.result().test_acc(), 15.0);
  EXPECT_LT(r.result().test_acc(), 35.0);
  EXPECT_EQ(r.result().client_sizes_size(), 4);
  for (const proto::RoundRecord& rec : r.rounds()) {
    EXPECT_EQ(rec.participants(), 4);
    // A prior of 4 float32 (16 bytes) plus framing each way, per client.
    EXPECT_GE(rec.bytes_up(), 4 * 16);
    EXPECT_LE(rec.bytes_up(), 4 * 128);
    EXPECT_GE(rec.bytes_down(), 4 * 16);
    EXPECT_LE(rec.bytes_down(), 4 * 128);
  }
  FederationOptions half = Majority();
  half.spec.set_client_fraction(0.5);
  ASSERT_OK_AND_ASSIGN(proto::FederationResult h, RunFederation(half));
  for (const proto::RoundRecord& rec : h.rounds()) EXPECT_EQ(rec.participants(), 2);
  FederationOptions unknown = Majority();
  unknown.spec.set_method("testing_majorityy");
  EXPECT_THAT(RunFederation(unknown), StatusIs(absl::StatusCode::kNotFound, HasSubstr("testing_majorityy")));
}

TEST(SimulatorTest, SameNumbersOnAnyThreadCountAndAfterResume) {
  FederationOptions o = Majority();
  ASSERT_OK_AND_ASSIGN(proto::FederationResult one, RunFederation(o));
  o.threads = 2;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult two, RunFederation(o));
  EXPECT_EQ(one.final_global(), two.final_global());
  o.seed = 8;  // the seed reaches the clients
  ASSERT_OK_AND_ASSIGN(proto::FederationResult other, RunFederation(o));
  EXPECT_NE(one.final_global(), other.final_global());

  o = Majority();
  const std::string dir = std::string(::testing::TempDir()) + "/ckpt_majority";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  o.checkpoint_dir = dir;
  o.checkpoint_every = 2;
  o.spec.set_rounds(3);  // "interrupted" after round 3; the last checkpoint is round 2
  ASSERT_OK(RunFederation(o).status());
  o.spec.set_rounds(6);
  o.resume = true;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult resumed, RunFederation(o));
  EXPECT_EQ(resumed.final_global(), one.final_global());
  ASSERT_EQ(resumed.rounds_size(), one.rounds_size());
  for (int i = 0; i < one.rounds_size(); ++i) {
    EXPECT_EQ(resumed.rounds(i).test_acc(), one.rounds(i).test_acc()) << i;
    EXPECT_EQ(resumed.rounds(i).bytes_up(), one.rounds(i).bytes_up()) << i;
  }

  // By time alone: a round that ends any time after the last checkpoint is due, so the
  // "interrupted" run leaves its round-3 checkpoint, and resuming it gives the same numbers.
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  o.checkpoint_every = 0;
  o.checkpoint_minutes = 1e-12;
  o.resume = false;
  o.spec.set_rounds(3);
  ASSERT_OK(RunFederation(o).status());
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> file, CheckpointReader::Open(dir + "/checkpoint.pb"));
    EXPECT_EQ(file->header().round(), 3);
  }
  o.spec.set_rounds(6);
  o.resume = true;
  ASSERT_OK_AND_ASSIGN(proto::FederationResult by_time, RunFederation(o));
  EXPECT_EQ(by_time.final_global(), one.final_global());
  o.spec.set_lr(0.02);  // a checkpoint of a different run is refused
  EXPECT_THAT(RunFederation(o), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("different run")));

  // This run's checkpoint written by an older binary (another version) is moved aside, not
  // resumed: the run starts from round 1 and computes the same numbers.
  o.spec.clear_lr();
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> file, CheckpointReader::Open(dir + "/checkpoint.pb"));
    proto::Checkpoint header = file->header();
    header.set_version(header.version() - 1);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointWriter> old, CheckpointWriter::Start(dir + "/checkpoint.pb", header));
    while (!file->AtEnd()) {
      ASSERT_OK_AND_ASSIGN(proto::Message state, file->NextClientState());
      ASSERT_OK(old->AddClientState(state));
    }
    ASSERT_OK(old->Commit());
  }
  ASSERT_OK_AND_ASSIGN(proto::FederationResult restarted, RunFederation(o));
  EXPECT_EQ(restarted.final_global(), one.final_global());
  EXPECT_EQ(restarted.resumed_s(), 0);
  EXPECT_EQ(system(("ls " + dir + "/checkpoint.pb.version* > /dev/null").c_str()), 0);
}

// Record keys hash this text: the enum settings print as the strings they were, in the order the
// strings' field numbers gave, so no key changed when they became enums (issue #67).
TEST(CanonicalEvalTextTest, PrintsTheSettingsAsTheirStringsDid) {
  proto::FederationSpec spec;
  proto::EvalProtocol& e = *spec.mutable_eval();
  e.set_model(proto::EvalProtocol::LOCAL);
  e.set_weighting(proto::EvalProtocol::UNWEIGHTED);
  e.set_round(proto::EvalProtocol::BEST_TEST);
  e.set_dropout_at_eval(false);
  e.set_global_test(proto::EvalProtocol::WHOLE_GRAPH);
  e.mutable_early_stop()->set_after_round(100);
  e.mutable_early_stop()->set_loss_ratio(1.3);
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  UseCanonicalEvalText(&printer);
  UseCanonicalEvalText(&printer);  // a second call changes nothing
  std::string text;
  ASSERT_TRUE(printer.PrintToString(spec, &text));
  EXPECT_EQ(text, "eval { model: \"local\" weighting: \"unweighted\" round: \"best_test\" dropout_at_eval: false "
                  "global_test: \"whole_graph\" early_stop { after_round: 100 loss_ratio: 1.3 } } ");
  e.Clear();  // defaults print nothing, as empty strings did
  e.set_round(proto::EvalProtocol::LAST);
  ASSERT_TRUE(printer.PrintToString(spec, &text));
  EXPECT_EQ(text, "eval { round: \"last\" } ");
  // The printer keeps declaration order inside EvalProtocol, EarlyStop included: a field declared
  // out of number order would silently change keys.
  const google::protobuf::Descriptor* early_stop = proto::EarlyStop::descriptor();
  for (int i = 1; i < early_stop->field_count(); ++i) {
    EXPECT_LT(early_stop->field(i - 1)->number(), early_stop->field(i)->number()) << early_stop->field(i)->name();
  }
}

TEST(CheckpointTest, DueEveryNRoundsOrAfterMinutes) {
  FederationOptions o;
  EXPECT_FALSE(o.CheckpointDue(4, 1e9));  // neither set: never
  o.checkpoint_every = 2;
  EXPECT_TRUE(o.CheckpointDue(4, 0));
  EXPECT_FALSE(o.CheckpointDue(3, 1e9));
  o.checkpoint_every = 0;
  o.checkpoint_minutes = 10;
  EXPECT_FALSE(o.CheckpointDue(3, 599.9));
  EXPECT_TRUE(o.CheckpointDue(3, 600));
  FederationOptions bad = Majority();
  bad.checkpoint_minutes = -1;
  EXPECT_THAT(ResolveOptions(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("checkpoint_minutes")));
}

// FedMpa's whole-graph test (the FedSage code's): every node and edge of the original graph, its
// test nodes exactly the union of the clients' test nodes.
TEST(GlobalTestTest, WholeGraphHoldsEveryEdgeAndTheClientsTestNodes) {
  FederationOptions o = testing::SmallFederation("testing_majority");
  o.spec.mutable_eval()->set_global_test(proto::EvalProtocol::WHOLE_GRAPH);
  ASSERT_OK_AND_ASSIGN(const ResolvedOptions resolved, ResolveOptions(o));
  o = *resolved;
  ASSERT_OK_AND_ASSIGN(PartitionedDataset loaded, LoadPartitionedDataset(o));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const ClientData> g, MakeGlobalTestData(o, loaded, torch::kCPU));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->data.num_nodes(), loaded.data.num_nodes());
  EXPECT_EQ(g->data.graph.num_entries(), loaded.data.graph.num_entries());
  int64_t client_entries = 0;  // the cross-client edges are what the clients' subgraphs lack
  for (const std::vector<int64_t>& nodes : loaded.partition.clients) {
    ASSERT_OK_AND_ASSIGN(graph::Dataset sub, graph::SubDataset(loaded.data, nodes));
    client_entries += sub.graph.num_entries();
  }
  EXPECT_LT(client_entries, g->data.graph.num_entries());
  EXPECT_EQ(g->split.train.sum().item<int64_t>() + g->split.val.sum().item<int64_t>(), 0);
  int64_t union_size = 0;
  for (int k = 0; k < loaded.partition.num_clients(); ++k) {
    ASSERT_OK_AND_ASSIGN(ClientShard shard, LoadClientShard(resolved, k));
    const torch::Tensor ids = torch::tensor(shard.data->node_ids, torch::kInt64);
    EXPECT_TRUE(torch::equal(g->split.test.index_select(0, ids), shard.data->split.test)) << k;
    union_size += shard.data->split.test.sum().item<int64_t>();
  }
  EXPECT_GT(union_size, 0);
  EXPECT_EQ(g->split.test.sum().item<int64_t>(), union_size);  // nothing outside the clients' tests
  // The default is FedEgo's server-node test: none for a Louvain partition.
  o.spec.mutable_eval()->clear_global_test();
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const ClientData> none, MakeGlobalTestData(o, loaded, torch::kCPU));
  EXPECT_EQ(none, nullptr);
  // A textproto may give a number that names no value (`global_test: 7`): resolving refuses it.
  o.spec.mutable_eval()->set_global_test(static_cast<proto::EvalProtocol::GlobalTest>(7));
  EXPECT_THAT(ResolveOptions(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("eval.global_test = 7")));
}

}  // namespace
}  // namespace fgl::fl
