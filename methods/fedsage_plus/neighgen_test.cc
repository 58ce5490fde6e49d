// NeighGen's training targets on a hand-made graph, the feature-matching loss by hand, mending,
// and the generator's output shapes.
#include "methods/fedsage_plus/neighgen.h"

#include "gtest/gtest.h"
#include "third_party/absl_ext/status_macros.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedsage_plus {
namespace {

// 7 nodes, node v has features (v+1, v+1, v+1):
//   0 - 1, 0 - 2, 0 - 3, 1 - 2, 1 - 4, 3 - 4, 4 - 5, 6 - 2, 6 - 4, 6 - 5
// Hiding {2, 4, 5} keeps [0, 1, 3, 6] and the edges 0 - 1, 0 - 3.
//   node 0 lost {2}       -> 1, features [x2, 0]
//   node 1 lost {2, 4}    -> 2, features [x2, x4]
//   node 3 lost {4}       -> 1, features [x4, 0]
//   node 6 lost {2, 4, 5} -> 3, features [x2, x4] (max_pred 2: the first two by id)
TEST(HideNodesTest, MissingNeighbourCountsAndFeatures) {
  auto g = graph::CsrFromEdges(7, {0, 0, 0, 1, 1, 3, 4, 6, 6, 6}, {1, 2, 3, 2, 4, 4, 5, 2, 4, 5});
  ASSERT_TRUE(g.ok());
  const torch::Tensor x = (torch::arange(7, torch::kFloat) + 1).unsqueeze(1).repeat({1, 3});
  ASSERT_OK_AND_ASSIGN(ImpairedGraph imp, HideNodes(*g, x, {2, 4, 5}, /*max_pred=*/2));
  EXPECT_EQ(imp.kept, (std::vector<int64_t>{0, 1, 3, 6}));
  EXPECT_EQ(imp.graph.num_nodes(), 4);
  EXPECT_EQ(imp.graph.num_entries(), 4);  // 0 - 1 and 0 - 3 (impaired ids 0 - 1, 0 - 2), both ways
  EXPECT_TRUE(torch::equal(imp.num_missing, torch::tensor({1.f, 2.f, 1.f, 3.f})));
  EXPECT_TRUE(torch::equal(imp.features, x.index_select(0, torch::tensor({0, 1, 3, 6}))));
  auto row = [](float v) { return torch::full({3}, v); };
  const torch::Tensor zero = torch::zeros({3});
  const torch::Tensor want = torch::stack({torch::stack({row(3), zero}), torch::stack({row(3), row(5)}),
                                           torch::stack({row(5), zero}), torch::stack({row(3), row(5)})});
  EXPECT_TRUE(torch::equal(imp.missing.Dense(), want));
  EXPECT_EQ(imp.missing.features.size(0), 4);  // the zero row and the 3 hidden nodes, once each
}

TEST(HideNodesTest, RejectsBadIds) {
  auto g = graph::CsrFromEdges(3, {0, 1}, {1, 2});
  ASSERT_TRUE(g.ok());
  const torch::Tensor x = torch::zeros({3, 2});
  EXPECT_FALSE(HideNodes(*g, x, {3}, 5).ok());
  EXPECT_FALSE(HideNodes(*g, x, {1, 1}, 5).ok());
}

TEST(ChooseHiddenTest, HalfOfTheCandidatesSameSeedSameNodes) {
  const torch::Tensor candidate = torch::tensor({true, false, true, true, false, true, true});
  const std::vector<int64_t> a = ChooseHidden(candidate, 0.5, 3), b = ChooseHidden(candidate, 0.5, 3);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 2u);  // floor(0.5 * 5)
  for (int64_t v : a) EXPECT_TRUE(candidate[v].item<bool>());
}

TEST(MissingFeatureLossTest, EachGeneratedSlotMatchesItsClosestHiddenNeighbour) {
  // Node 0: 2 hidden neighbours a = (0, 0), b = (2, 2); generated (2, 0) and (0, 0).
  //   slot 0: min(mse to a = 2, to b = 2) = 2; slot 1: min(0, 4) = 0 -> 2.
  // Node 1: 1 hidden neighbour (1, 1); generated (1, 3), (9, 9): slot 1 is not used -> 2.
  // Node 2: nothing hidden -> 0. Mean over 3 nodes: 4 / 3.
  const torch::Tensor gen = torch::tensor({{{2.f, 0.f}, {0.f, 0.f}}, {{1.f, 3.f}, {9.f, 9.f}}, {{5.f, 5.f}, {5.f, 5.f}}});
  const torch::Tensor target =
      torch::tensor({{{0.f, 0.f}, {2.f, 2.f}}, {{1.f, 1.f}, {0.f, 0.f}}, {{0.f, 0.f}, {0.f, 0.f}}});
  const torch::Tensor loss = MissingFeatureLoss(gen, MissingNeighbours::FromDense(target), torch::tensor({2.f, 1.f, 0.f}));
  EXPECT_NEAR(loss.item<float>(), 4.f / 3, 1e-6);
}

// The loss as autograd would run it over the whole [N, P, P, F] differences: the chunked,
// argmin-saving version must give the same loss and the same gradient, bit for bit.
torch::Tensor DirectMissingFeatureLoss(const torch::Tensor& generated, const torch::Tensor& target,
                                       const torch::Tensor& num_missing) {
  const int64_t p = generated.size(1);
  const torch::Tensor dist = (generated.unsqueeze(2) - target.unsqueeze(1)).pow(2).mean(-1);
  const torch::Tensor valid = torch::arange(p, generated.options()).unsqueeze(0) <
                              num_missing.clamp(0, static_cast<double>(p)).floor().unsqueeze(1);
  const torch::Tensor closest =
      std::get<0>(torch::where(valid.unsqueeze(1), dist, torch::full_like(dist, 1e30)).min(2));
  return torch::where(valid, closest, torch::zeros_like(closest)).sum(1).mean();
}

TEST(MissingFeatureLossTest, BitIdenticalToTheDirectExpressionAcrossChunks) {
  torch::manual_seed(7);
  // 5 * 5 * 1000 elements a node: 700 nodes span two chunks of the loss.
  const int64_t n = 700, p = 5, f = 1000;
  const torch::Tensor target = torch::randn({n, p, f});
  const torch::Tensor counts = torch::randint(0, 8, {n}).to(torch::kFloat);  // 0 and over max_pred too
  const torch::Tensor base = torch::randn({n, p, f});
  torch::Tensor a = base.clone().requires_grad_(true), b = base.clone().requires_grad_(true);
  const torch::Tensor ours = MissingFeatureLoss(a, MissingNeighbours::FromDense(target), counts);
  const torch::Tensor direct = DirectMissingFeatureLoss(b, target, counts);
  (ours * 3).backward();
  (direct * 3).backward();
  EXPECT_TRUE(torch::equal(ours, direct)) << ours.item<float>() << " vs " << direct.item<float>();
  EXPECT_TRUE(torch::equal(a.grad(), b.grad()));
  EXPECT_GT(a.grad().abs().sum().item<float>(), 0);
}

TEST(MendGraphTest, GeneratedNeighboursJoinBothWays) {
  auto g = graph::CsrFromEdges(2, {0}, {1});  // 0 - 1
  ASSERT_TRUE(g.ok());
  const torch::Tensor x = torch::zeros({2, 1});
  const torch::Tensor generated = torch::tensor({{{1.f}, {2.f}, {3.f}}, {{4.f}, {5.f}, {6.f}}});
  // Counts round to 2 and 0 (negative): nodes 2, 3 hang off node 0 with features 1, 2.
  ASSERT_OK_AND_ASSIGN(MendedGraph m, MendGraph(*g, x, torch::tensor({1.6f, -0.7f}), generated));
  EXPECT_EQ(m.graph.num_nodes(), 4);
  EXPECT_TRUE(torch::equal(m.graph.row_ptr(), torch::tensor({0, 3, 4, 5, 6}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(m.graph.col(), torch::tensor({1, 2, 3, 0, 0, 0}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(m.features, torch::tensor({{0.f}, {0.f}, {1.f}, {2.f}})));
}

// The references cast dGen's count to an integer (truncation); ours rounds.
TEST(MendGraphTest, TruncatedCountsGenerateFewer) {
  const torch::Tensor counts = torch::tensor({0.6f, 1.5f, 2.49f, 7.f, -0.7f});
  EXPECT_TRUE(torch::equal(UsedSlots(counts, 5), torch::tensor({1, 2, 2, 5, 0}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(UsedSlots(counts, 5, /*truncate=*/true), torch::tensor({0, 1, 2, 5, 0}, torch::kInt64)));
  auto g = graph::CsrFromEdges(2, {0}, {1});
  ASSERT_TRUE(g.ok());
  const torch::Tensor generated = torch::tensor({{{1.f}, {2.f}, {3.f}}, {{4.f}, {5.f}, {6.f}}});
  ASSERT_OK_AND_ASSIGN(MendedGraph m, MendGraph(*g, torch::zeros({2, 1}), torch::tensor({1.6f, 0.7f}), generated,
                                                /*truncate=*/true));
  EXPECT_EQ(m.graph.num_nodes(), 3);  // one neighbour for node 0, none for node 1
  EXPECT_TRUE(torch::equal(m.features, torch::tensor({{0.f}, {0.f}, {1.f}})));
}

// The path 0 - 1 - 2 - 3 - 4 the generator tests run on.
absl::StatusOr<nn::GraphView> PathView() {
  FGL_ASSIGN_OR_RETURN(graph::CsrGraph g, graph::CsrFromEdges(5, {0, 1, 2, 3}, {1, 2, 3, 4}));
  return nn::GraphView::Create(g);
}

// fGen's whole output layer, every slot of every node, as the reference for the slot-wise one.
torch::Tensor WholeOutputLayer(NeighGen& gen, const nn::NodeFeatures& x, const nn::GraphView& view,
                               const torch::Tensor& noise) {
  const torch::Tensor z = gen->encoder->forward(x, view).logits;
  const torch::Tensor h = torch::relu(gen->fgen2->forward(torch::relu(gen->fgen1->forward(z + noise))));
  return torch::tanh(gen->fgen_out->forward(h)).view({z.size(0), gen->options.max_pred(), gen->options.num_features()});
}

TEST(NeighGenTest, OutputShapesAndRange) {
  torch::manual_seed(1);
  NeighGen gen(NeighGenOptions(6).hidden(8).latent(4).max_pred(3));
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, PathView());
  gen->eval();
  const NeighGenOutput out = gen->forward(nn::NodeFeatures(torch::randn({5, 6})), view, torch::randn({5, 4}));
  EXPECT_EQ(out.num_missing.sizes(), (std::vector<int64_t>{5}));
  EXPECT_EQ(out.features.sizes(), (std::vector<int64_t>{5, 3, 6}));
  EXPECT_TRUE((out.num_missing >= 0).all().item<bool>());
  EXPECT_TRUE((out.features.abs() < 1).all().item<bool>());
}

// fGen computes a slot only for the nodes that read it: the slots below max(min_slots, mended
// count) equal the whole output layer's, the others are 0.
TEST(NeighGenTest, ComputesOnlyTheSlotsThatAreRead) {
  torch::manual_seed(2);
  NeighGen gen(NeighGenOptions(6).hidden(8).latent(4).max_pred(3));
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, PathView());
  gen->eval();
  torch::NoGradGuard no_grad;
  const nn::NodeFeatures x(torch::randn({5, 6}));
  const torch::Tensor noise = torch::randn({5, 4});
  const torch::Tensor whole = WholeOutputLayer(gen, x, view, noise);

  const torch::Tensor min_slots = torch::tensor({0, 1, 2, 3, 0}, torch::kInt64);
  const NeighGenOutput out = gen->forward(x, view, noise, min_slots);
  const torch::Tensor read = torch::maximum(UsedSlots(out.num_missing, 3), min_slots);
  for (int64_t v = 0; v < 5; ++v) {
    for (int64_t j = 0; j < 3; ++j) {
      if (j < read[v].item<int64_t>()) {
        EXPECT_TRUE(torch::allclose(out.features[v][j], whole[v][j], 1e-6, 1e-6)) << v << " " << j;
      } else {
        EXPECT_TRUE(torch::equal(out.features[v][j], torch::zeros({6}))) << v << " " << j;
      }
    }
  }
  // Every slot read: the whole output.
  const NeighGenOutput all = gen->forward(x, view, noise, torch::full({5}, 3, torch::kInt64));
  EXPECT_TRUE(torch::allclose(all.features, whole, 1e-6, 1e-6));
}

// The gradients of the slot-wise output layer equal autograd's over the whole layer with the
// unread slots masked out.
TEST(NeighGenTest, SlotGradientsMatchTheWholeLayer) {
  torch::manual_seed(3);
  NeighGen gen(NeighGenOptions(6).hidden(8).latent(4).max_pred(3).dropout(0));
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, PathView());
  const nn::NodeFeatures x(torch::randn({5, 6}));
  const torch::Tensor noise = torch::randn({5, 4});
  const torch::Tensor min_slots = torch::tensor({0, 1, 2, 3, 0}, torch::kInt64);
  const torch::Tensor r = torch::randn({5, 3, 6});

  const NeighGenOutput out = gen->forward(x, view, noise, min_slots);
  const torch::Tensor read = torch::maximum(UsedSlots(out.num_missing, 3), min_slots);
  (out.features * r).sum().backward();
  const torch::Tensor gw = gen->fgen_out->weight.grad().clone(), gb = gen->fgen_out->bias.grad().clone();
  const torch::Tensor g2 = gen->fgen2->weight.grad().clone();
  gen->zero_grad();

  const torch::Tensor mask = (torch::arange(3).unsqueeze(0) < read.unsqueeze(1)).unsqueeze(2);  // [5, 3, 1]
  const torch::Tensor whole = WholeOutputLayer(gen, x, view, noise);
  (torch::where(mask, whole, torch::zeros_like(whole)) * r).sum().backward();
  EXPECT_TRUE(torch::allclose(gw, gen->fgen_out->weight.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(gb, gen->fgen_out->bias.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(g2, gen->fgen2->weight.grad(), 1e-5, 1e-6));
  EXPECT_GT(gw.abs().sum().item<double>(), 0);
}

TEST(NeighGenTest, UsedSlotsRoundsAndClamps) {
  EXPECT_TRUE(torch::equal(UsedSlots(torch::tensor({-1.f, 0.4f, 0.6f, 2.5f, 9.f}), 5),
                           torch::tensor({0, 0, 1, 2, 5}, torch::kInt64)));
}

}  // namespace
}  // namespace fgl::methods::fedsage_plus
