// FedTAD: reliability on a hand-made graph, generator and pseudo-graph shapes, distillation that
// moves the student towards its teachers, and the plug-in's contract with its base method.
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

#include <google/protobuf/text_format.h>
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/typed_state.h"
#include "fl/testing/client_data.h"
#include "gmock/gmock.h"
#include "graph/csr_graph.h"
#include "gtest/gtest.h"
#include "methods/fedtad/fedtad.pb.h"
#include "methods/fedtad/distillation.h"
#include "methods/fedtad/generator.h"
#include "methods/fedtad/reliability.h"
#include "nn/graph_view.h"
#include "third_party/absl_ext/status_macros.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedtad {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

// A triangle 0-1-2 and an isolated node 3.
graph::CsrGraph TriangleAndIsolated() {
  auto g = graph::CsrFromEdges(4, {0, 1, 2}, {1, 2, 0});
  CHECK(g.ok());
  return *g;
}

TEST(ReliabilityTest, MatchesHandComputedValues) {
  const graph::CsrGraph g = TriangleAndIsolated();
  // x0 = x1 = e1, x2 = e2, x3 = e1. With self-loops every triangle node has (T^k)_ii = 1/3 and the
  // isolated node 1, so h_0 = h_1 = [1, 0, 1/3 x5], h_2 = [0, 1, 1/3 x5]:
  // cos(h0, h1) = 1, cos(h0, h2) = (5/9) / (14/9) = 5/14.
  const torch::Tensor x = torch::tensor({{1.f, 0.f}, {1.f, 0.f}, {0.f, 1.f}, {1.f, 0.f}});
  const torch::Tensor y = torch::tensor({0, 0, 1, 1}, torch::kLong);
  const torch::Tensor train = torch::tensor({true, true, true, false});
  ASSERT_OK_AND_ASSIGN(torch::Tensor phi, ClassReliability(g, x, y, train, 3, ReliabilityKind::kTopology));
  // Class 0: nodes 0 and 1, each (1 + 1 + 5/14) / 3. Class 1: node 2, (1 + 5/14 + 5/14) / 3.
  // Class 2 has no labelled node. Node 3 is not a training node.
  EXPECT_NEAR(phi[0].item<float>(), 2 * (2 + 5.0 / 14) / 3, 1e-5);
  EXPECT_NEAR(phi[1].item<float>(), (1 + 10.0 / 14) / 3, 1e-5);
  EXPECT_EQ(phi[2].item<float>(), 0.f);

  // The isolated node counts only itself: (1 + 0) / 1.
  ASSERT_OK_AND_ASSIGN(phi, ClassReliability(g, x, y, torch::tensor({false, false, false, true}), 3,
                                             ReliabilityKind::kTopology));
  EXPECT_NEAR(phi[1].item<float>(), 1.0, 1e-6);

  ASSERT_OK_AND_ASSIGN(phi, ClassReliability(g, x, y, train, 3, ReliabilityKind::kNodeCount));
  EXPECT_TRUE(torch::equal(phi, torch::tensor({2.f, 1.f, 0.f})));
  ASSERT_OK_AND_ASSIGN(phi, ClassReliability(g, x, y, train, 3, ReliabilityKind::kEqual));
  EXPECT_TRUE(torch::equal(phi, torch::tensor({1.f, 1.f, 1.f})));

  EXPECT_THAT(ClassReliability(g, x, torch::tensor({0, 0, 5, 1}, torch::kLong), train, 3,
                               ReliabilityKind::kTopology),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("label 5 of node 2")));
  EXPECT_THAT(ClassReliability(g, x.slice(0, 0, 3), y, train, 3, ReliabilityKind::kTopology),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("")));
}

TEST(ReliabilityTest, NoiseIsSeededAndNonNegativeAndNormalisationIsPerClass) {
  const torch::Tensor phi = torch::tensor({1.f, 2.f, 0.f, 4.f});
  const torch::Tensor a = PerturbReliability(phi, 0.1, 5), b = PerturbReliability(phi, 0.1, 5);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, phi));
  EXPECT_TRUE((a >= 0).all().item<bool>());
  EXPECT_EQ(a[2].item<float>(), 0.f);
  EXPECT_LT((a - phi).abs().max().item<float>(), 4 * 0.1 * 6);  // |eps| < 6: a 1e-9 event

  const torch::Tensor w = NormalizeAcrossClients(torch::tensor({{1.f, 0.f, 2.f}, {3.f, 0.f, 2.f}}));
  EXPECT_TRUE(torch::allclose(w, torch::tensor({{0.25f, 0.f, 0.5f}, {0.75f, 0.f, 0.5f}})));
}

TEST(GeneratorTest, ShapesParameterCountAndPseudoLabels) {
  ConditionalGenerator g(32, 7, 1433);
  int64_t count = 0;
  for (const auto& p : g->parameters()) count += p.numel();
  EXPECT_EQ(count, 412234);  // the note's count for Cora
  const torch::Tensor y = PseudoLabels(100, 7);
  const torch::Tensor sizes = torch::bincount(y);
  EXPECT_TRUE(torch::equal(sizes, torch::tensor({14, 14, 14, 14, 14, 14, 16}, torch::kLong)));
  EXPECT_EQ(g->forward(torch::randn({100, 32}), y).sizes(), (std::vector<int64_t>{100, 1433}));
}

TEST(GeneratorTest, KnnPseudoGraphIsSymmetricWithWeightedSelfLoops) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({12, 6});
  ASSERT_OK_AND_ASSIGN(graph::CsrGraph g, KnnPseudoGraph(x, 5, 2.0f));
  EXPECT_EQ(g.num_nodes(), 12);
  EXPECT_TRUE(g.IsSymmetric());
  EXPECT_EQ(g.CountSelfLoops(), 12);
  const float* w = g.edge_weight().data_ptr<float>();
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_GE(g.degree(i), 5) << i;  // itself and its 4 nearest others, at least
    for (int64_t e = g.row_ptr_data()[i]; e < g.row_ptr_data()[i + 1]; ++e) {
      EXPECT_EQ(w[e], g.col_data()[e] == i ? 2.0f : 1.0f);
    }
  }
  // Node 1 is a scaled copy of node 0: cosine 1, so they are each other's neighbours.
  torch::Tensor y = x.clone();
  y[1] = 3 * y[0];
  ASSERT_OK_AND_ASSIGN(g, KnnPseudoGraph(y, 2, 1.0f));
  EXPECT_THAT(std::vector<int64_t>(g.neighbors(0).begin(), g.neighbors(0).end()), ::testing::Contains(1));
  EXPECT_THAT(KnnPseudoGraph(torch::randn({3}), 5, 1.0f), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("")));
}

fl::NamedTensors Params(nn::GnnModel& m) {
  fl::NamedTensors out;
  for (const auto& item : m.named_parameters(true)) out.emplace_back(item.key(), item.value());
  return out;
}

// A student, a teacher (GCN, 8 features, 3 classes, from `seed`) and a distiller.
struct DistillCase {
  std::shared_ptr<nn::GnnModel> student, teacher;
  std::unique_ptr<DataFreeDistiller> distiller;
};
absl::StatusOr<DistillCase> MakeDistillCase(uint64_t seed, const DistillationOptions& o,
                                            const std::string& spec = "gcn:layers=2,hidden=16,dropout=0.5") {
  torch::manual_seed(seed);
  DistillCase c;
  FGL_ASSIGN_OR_RETURN(c.student, nn::MakeModel(spec, 8, 3));
  FGL_ASSIGN_OR_RETURN(c.teacher, nn::MakeModel(spec, 8, 3));
  FGL_ASSIGN_OR_RETURN(c.distiller, DataFreeDistiller::Create(spec, 8, 3, o, 11, torch::kCPU));
  return c;
}

// Mean |student - teacher| of the logits on (x, view), both in eval mode.
double LogitGap(DistillCase& c, const nn::NodeFeatures& x, const nn::GraphView& view) {
  torch::NoGradGuard no_grad;
  c.student->eval();
  c.teacher->eval();
  return (c.student->forward(x, view).logits - c.teacher->forward(x, view).logits).abs().mean().item<double>();
}

TEST(DistillerTest, StudentMovesTowardsTheTeachers) {
  DistillationOptions o = FromParams(FedTadParams(), false);
  o.num_pseudo = 30;
  o.distill_lr = 1e-2;
  ASSERT_OK_AND_ASSIGN(DistillCase c, MakeDistillCase(1, o));
  // Distance between the two models' logits on a fixed probe graph.
  const torch::Tensor probe = torch::randn({40, 8});
  ASSERT_OK_AND_ASSIGN(graph::CsrGraph pg, KnnPseudoGraph(probe, 5, 1.0f));
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, nn::GraphView::Create(pg));
  const double before = LogitGap(c, probe, view);
  const fl::NamedTensors live = Params(*c.student);
  for (int round = 0; round < 8; ++round) {
    ASSERT_OK(c.distiller->Distill(live, {Teacher{Params(*c.teacher), torch::ones({3})}}, 0, round));
  }
  EXPECT_LT(LogitGap(c, probe, view), 0.7 * before);
  EXPECT_THAT(c.distiller->Distill(live, {Teacher{Params(*c.teacher), torch::ones({2})}}, 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("class weights")));
}

// The official code's dropout draws change the result only where dropout draws anything: with a
// dropout-free model they are the same computation (up to rounding: K backward passes through the
// global model instead of one). The student trains with dropout, so with dropout in the model they
// matter even when the frozen models evaluate without it.
TEST(DistillerTest, OfficialDropoutDrawsMatterOnlyWithDropout) {
  auto distilled = [](const std::string& spec, bool dropout_at_eval, bool official) -> torch::Tensor {
    DistillationOptions o = FromParams(FedTadParams(), dropout_at_eval);
    o.num_pseudo = 30;
    o.official_dropout_draws = official;
    auto c = MakeDistillCase(1, o, spec);
    CHECK(c.ok()) << c.status();
    const fl::NamedTensors live = Params(*c->student);
    const std::vector<Teacher> teachers = {Teacher{Params(*c->teacher), torch::ones({3})},
                                           Teacher{Params(*c->teacher), torch::full({3}, 0.5)}};
    CHECK(c->distiller->Distill(live, teachers, 0, 7).ok());
    return live.front().second.clone();
  };
  const std::string no_dropout = "gcn:layers=2,hidden=16,dropout=0", dropout = "gcn:layers=2,hidden=16,dropout=0.5";
  EXPECT_TRUE(torch::allclose(distilled(no_dropout, true, false), distilled(no_dropout, true, true), 1e-5, 1e-6));
  EXPECT_FALSE(torch::equal(distilled(dropout, true, false), distilled(dropout, true, true)));
  EXPECT_FALSE(torch::equal(distilled(dropout, false, false), distilled(dropout, false, true)));
  EXPECT_TRUE(torch::equal(distilled(dropout, true, true), distilled(dropout, true, true)));  // still seeded
}

// r-eq: distillation on a given real graph moves the student towards the teacher on that graph.
TEST(DistillerTest, RealGraphAblationDistilsOnTheGivenGraph) {
  DistillationOptions o = FromParams(FedTadParams(), false);
  o.distill_lr = 1e-2;
  ASSERT_OK_AND_ASSIGN(DistillCase c, MakeDistillCase(2, o));
  const torch::Tensor x = torch::randn({60, 8});
  ASSERT_OK_AND_ASSIGN(graph::CsrGraph g, KnnPseudoGraph(x, 4, 1.0f));
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, nn::GraphView::Create(g));
  auto features = std::make_shared<const nn::NodeFeatures>(x);
  c.distiller->UseRealGraph(features, std::make_shared<const nn::GraphView>(view));
  const double before = LogitGap(c, *features, view);
  const fl::NamedTensors live = Params(*c.student);
  for (int round = 0; round < 8; ++round) {
    ASSERT_OK(c.distiller->Distill(live, {Teacher{Params(*c.teacher), torch::ones({3})}}, 0, round));
  }
  EXPECT_LT(LogitGap(c, *features, view), 0.5 * before);
}

// A base method whose server exposes three aggregates (as a clustered or personalised method
// would): clients {0, 1}, {2} and {3}. It aggregates nothing itself.
class ThreeAggregatesServer final : public fl::ServerAlgorithm, public fl::AggregateSource {
 public:
  explicit ThreeAggregatesServer(const fl::MethodConfig& config) {
    for (int a = 0; a < 3; ++a) models_.push_back(*nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
  }
  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo&) override {
    fl::proto::Message m;
    m.mutable_header()->set_type("fedavg.weights");
    fl::AddTensors(Params(*models_[0]), &m);
    return m;
  }
  absl::Status Accumulate(const fl::proto::Message&) override { return absl::OkStatus(); }
  absl::Status FinishRound(const fl::RoundInfo&) override { return absl::OkStatus(); }
  absl::StatusOr<fl::proto::Message> SaveState() const override { return fl::proto::Message(); }
  absl::Status RestoreState(const fl::proto::Message&) override { return absl::OkStatus(); }
  std::vector<fl::ServerAggregate> Aggregates() override {
    return {{Params(*models_[0]), {0, 1}}, {Params(*models_[1]), {2}}, {Params(*models_[2]), {3}}};
  }
  fl::AggregateSource* aggregate_source() override { return this; }

 private:
  std::vector<std::shared_ptr<nn::GnnModel>> models_;
};

FGL_REGISTER_METHOD(
    "test_three_aggregates",
    [](std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config) {
      return fl::FindMethod("fedavg")->client(std::move(data), config);
    },
    [](const fl::MethodConfig& config) -> absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> {
      return std::unique_ptr<fl::ServerAlgorithm>(new ThreeAggregatesServer(config));
    });

TEST(PluginTest, DistilsEveryAggregateFromItsOwnRepliesOnly) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=16,dropout=0.5";
  config.num_features = 8;
  config.num_classes = 3;
  FedTadParams small;
  small.set_num_pseudo(12);
  config.spec.add_method_params()->PackFrom(small);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("test_three_aggregates+fedtad"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  std::vector<std::unique_ptr<fl::ClientAlgorithm>> clients;
  for (int k = 0; k < 4; ++k) {
    ASSERT_OK_AND_ASSIGN(auto c, f.client(fl::testing::CsbmClient(120, 8, 3, 20 + k, k), config));
    ASSERT_NE(c->preparing(), nullptr);
    ASSERT_OK_AND_ASSIGN(fl::proto::Message prepared, c->preparing()->Prepare());
    ASSERT_OK(server->prepared()->AcceptPreparation(prepared));
    clients.push_back(std::move(c));
  }
  ASSERT_OK(server->prepared()->FinishPreparation());
  std::vector<torch::Tensor> before;
  for (const auto& a : fl::AggregatesOf(*server)) before.push_back(a.parameters.front().second.clone());
  const fl::RoundInfo round{1, 5};
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast(round));
  for (int k = 0; k < 3; ++k) {  // client 3 does not reply this round
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, clients[k]->Train(global, round));
    ASSERT_OK(server->Accumulate(reply));
  }
  ASSERT_OK(server->FinishRound(round));
  const std::vector<fl::ServerAggregate> after = fl::AggregatesOf(*server);
  EXPECT_FALSE(torch::equal(before[0], after[0].parameters.front().second));  // teachers 0 and 1
  EXPECT_FALSE(torch::equal(before[1], after[1].parameters.front().second));  // teacher 2
  EXPECT_TRUE(torch::equal(before[2], after[2].parameters.front().second));   // no teacher: untouched
  // A preparation without a valid reliability vector is refused, naming the client.
  fl::proto::Message bad;
  bad.mutable_header()->set_sender(7);
  fl::AddTensors({{"fedtad.reliability", torch::tensor({1.f, -1.f, 0.f})}}, &bad);
  EXPECT_THAT(server->prepared()->AcceptPreparation(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("client 7")));
}

fl::FederationOptions Small(const std::string& method) { return fl::testing::SmallFederation(method); }

TEST(PluginTest, ZeroIterationsLeaveTheBaseMethodUntouched) {
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult base, fl::RunFederation(Small("fedprox")));
  fl::FederationOptions o = Small("fedprox+fedtad");
  FedTadParams none;
  none.set_iterations(0);
  o.spec.add_method_params()->PackFrom(none);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult plugged, fl::RunFederation(o));
  ASSERT_EQ(base.rounds_size(), plugged.rounds_size());
  for (int r = 0; r < base.rounds_size(); ++r) {
    EXPECT_EQ(base.rounds(r).val_acc(), plugged.rounds(r).val_acc()) << r;
    EXPECT_EQ(base.rounds(r).test_acc(), plugged.rounds(r).test_acc()) << r;
    EXPECT_EQ(base.rounds(r).bytes_up(), plugged.rounds(r).bytes_up()) << r;
  }
  // Only the one-off reliability upload is extra: 4 classes as float32 per client, plus headers.
  EXPECT_GE(plugged.result().preparation_bytes_up(), 4 * 16);
  EXPECT_LT(plugged.result().preparation_bytes_up(), 4 * 128);
  // With its default iterations the plug-in does change the global model.
  o.spec.clear_method_params();
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult distilled, fl::RunFederation(o));
  bool differs = false;
  for (int r = 0; r < base.rounds_size(); ++r) differs |= base.rounds(r).val_acc() != distilled.rounds(r).val_acc();
  EXPECT_TRUE(differs);
  o.spec.set_method("fedprox+nosuchplugin");
  EXPECT_THAT(fl::RunFederation(o), StatusIs(absl::StatusCode::kNotFound, HasSubstr("nosuchplugin")));
}

// The plug-in forwards every call its base serves: with a global test graph, "fedavg+fedtad" is
// scored there each round like FedAvg is (PredictGraph), and its clients' reports pass through.
TEST(PluginTest, PluggedMethodScoresTheGlobalTestGraph) {
  for (const char* method : {"fedavg", "fedavg+fedtad"}) {
    fl::FederationOptions o = Small(method);
    o.spec.mutable_eval()->set_global_test(fl::proto::EvalProtocol::WHOLE_GRAPH);
    ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
    ASSERT_EQ(r.rounds_size(), 6) << method;
    for (const fl::proto::RoundRecord& round : r.rounds()) EXPECT_TRUE(round.has_global_test_acc()) << method;
    EXPECT_GT(r.result().global_test_acc(), 40.0) << method;  // 4 classes: well above chance
  }
}

// The runtime hands the whole dataset to the server only when the run asks for it; the plug-in's
// r-eq ablation then runs (and differs from the pseudo-graph FedTAD), and without it is refused.
TEST(PluginTest, RealGraphAblationLoadsTheWholeDatasetOnTheServer) {
  fl::FederationOptions o = Small("fedtad");
  FedTadParams p;
  p.set_reliability(FedTadParams::EQUAL);
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult eq, fl::RunFederation(o));
  p.set_real_graph(true);
  o.spec.mutable_method_params(0)->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r_eq, fl::RunFederation(o));
  bool differs = false;
  for (int r = 0; r < eq.rounds_size(); ++r) differs |= eq.rounds(r).val_acc() != r_eq.rounds(r).val_acc();
  EXPECT_TRUE(differs);
  // The distillation changed the global model (no claim on accuracy: on this toy graph pulling
  // the global model towards the teachers' mean logits on real nodes costs accuracy).
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult fedavg, fl::RunFederation(Small("fedavg")));
  fl::proto::Message a, b;
  ASSERT_TRUE(a.ParseFromString(r_eq.final_global()));
  ASSERT_TRUE(b.ParseFromString(fedavg.final_global()));
  ASSERT_EQ(a.tensors_size(), b.tensors_size());
  ASSERT_GT(a.tensors_size(), 0);
  bool moved = false;
  for (int i = 0; i < a.tensors_size(); ++i) moved |= a.tensors(i).data() != b.tensors(i).data();
  EXPECT_TRUE(moved);
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=16";
  config.num_features = 8;
  config.num_classes = 3;
  config.spec.add_method_params()->PackFrom(p);
  config.spec.set_dataset("no_such_dataset");  // a server that cannot load the dataset says so
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedtad"));
  absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> server = f.server(config);
  EXPECT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("fedtad.real_graph: the server loads the whole dataset"));
}

// The server's reliabilities are a typed FedTadServerState in its checkpoint (no tensor named
// "fedtad.reliability.<id>"), restored exactly; a state with a duplicate client, a wrong length,
// a non-finite value, or none at all is refused, naming the client.
TEST(PluginTest, ServerStateIsTypedAndChecked) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=16";
  config.num_features = 8;
  config.num_classes = 3;
  FedTadParams small;
  small.set_num_pseudo(12);
  config.spec.add_method_params()->PackFrom(small);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedtad"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  for (int k = 0; k < 2; ++k) {
    ASSERT_OK_AND_ASSIGN(auto c, f.client(fl::testing::CsbmClient(120, 8, 3, 20 + k, k), config));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message prepared, c->preparing()->Prepare());
    ASSERT_OK(server->prepared()->AcceptPreparation(prepared));
  }
  ASSERT_OK_AND_ASSIGN(const fl::proto::Message saved, server->SaveState());
  for (const auto& t : saved.tensors()) {
    EXPECT_EQ(t.name().rfind("fedtad.reliability", 0), std::string::npos) << t.name();
  }
  ASSERT_OK_AND_ASSIGN(const FedTadServerState state, fl::UnpackState<FedTadServerState>(saved, "test"));
  ASSERT_EQ(state.reliability_size(), 2);
  EXPECT_EQ(state.reliability(0).client(), 0);
  EXPECT_EQ(state.reliability(1).client(), 1);

  ASSERT_OK_AND_ASSIGN(auto fresh, f.server(config));
  ASSERT_OK(fresh->RestoreState(saved));
  ASSERT_OK_AND_ASSIGN(const fl::proto::Message again, fresh->SaveState());
  ASSERT_OK_AND_ASSIGN(const FedTadServerState restored, fl::UnpackState<FedTadServerState>(again, "test"));
  EXPECT_EQ(restored.SerializeAsString(), state.SerializeAsString());

  auto with = [&](const std::function<void(FedTadServerState*)>& change) {
    FedTadServerState s = state;
    change(&s);
    fl::proto::Message m = saved;
    fl::EraseState<FedTadServerState>(&m);
    fl::PackState(s, &m);
    return m;
  };
  const auto refused = [](const std::string& what) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
  };
  EXPECT_THAT(fresh->RestoreState(with([](FedTadServerState* s) { s->mutable_reliability(1)->set_client(0); })),
              refused("fedtad state: client 0 appears twice"));
  EXPECT_THAT(fresh->RestoreState(with([](FedTadServerState* s) {
                *s->mutable_reliability(1)->mutable_phi() = fl::EncodeTensor("phi", torch::ones({4}));
              })),
              refused("client 1: reliability has shape [4], not [3]"));
  EXPECT_THAT(fresh->RestoreState(with([](FedTadServerState* s) {
                *s->mutable_reliability(0)->mutable_phi() = fl::EncodeTensor("phi", torch::tensor({1.f, NAN, 1.f}));
              })),
              refused("client 0: reliability holds a non-finite value"));
  fl::proto::Message none = saved;
  fl::EraseState<FedTadServerState>(&none);
  EXPECT_THAT(fresh->RestoreState(none), refused("expected typed state fgl.methods.fedtad.FedTadServerState"));
}

TEST(PluginTest, FedTadResumesExactly) {
  fl::FederationOptions o = Small("fedtad");
  FedTadParams noisy;
  noisy.set_reliability_noise(0.1);
  o.spec.add_method_params()->PackFrom(noisy);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult whole, fl::RunFederation(o));
  EXPECT_GT(whole.result().test_acc(), 60.0);
  const std::string dir = std::string(::testing::TempDir()) + "/ckpt_fedtad";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  o.checkpoint_dir = dir;
  o.checkpoint_every = 2;
  o.spec.set_rounds(3);
  ASSERT_OK(fl::RunFederation(o).status());
  o.spec.set_rounds(6);
  o.resume = true;
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult resumed, fl::RunFederation(o));
  ASSERT_EQ(resumed.rounds_size(), whole.rounds_size());
  for (int r = 0; r < whole.rounds_size(); ++r) {
    EXPECT_EQ(resumed.rounds(r).val_acc(), whole.rounds(r).val_acc()) << r;
    EXPECT_EQ(resumed.rounds(r).test_acc(), whole.rounds(r).test_acc()) << r;
  }
}

// knn (the pseudo graph's k) could not be set from any spec before typed parameters: set from a
// textproto, it reaches the distiller and changes the run.
TEST(PluginTest, KnnFromATextprotoTakesEffect) {
  fl::FederationOptions o = Small("fedtad");
  o.spec.set_rounds(3);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult defaults, fl::RunFederation(o));
  FedTadParams p;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString("knn: 2 num_pseudo: 40", &p));
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult knn2, fl::RunFederation(o));
  EXPECT_NE(defaults.final_global(), knn2.final_global());
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString("knn: 0", &p));
  o.spec.mutable_method_params(0)->PackFrom(p);
  EXPECT_THAT(fl::RunFederation(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fedtad.knn = 0")));
}

}  // namespace
}  // namespace fgl::methods::fedtad
