// FedEgo: EMD and λ on hand-made distributions, Mixup's position alignment, the server's
// resampled trees, Theorem 4.1 (alignment does not matter for linear Φ), and a federation with a
// global test graph that repeats bit for bit.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "fl/federated_data.h"
#include "fl/registry.h"
#include "fl/run_setup.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "graph/ego_graph.h"
#include "gtest/gtest.h"
#include "methods/fedego/fedego.pb.h"
#include "methods/fedego/loss.h"
#include "methods/fedego/mixup.h"
#include "nn/losses/losses.h"
#include "nn/models/ego_sage.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedego {
namespace {

TEST(MixupTest, EmdAndLambdaOnHandMadeDistributions) {
  const torch::Tensor p = LabelDistribution(torch::tensor({0, 0, 1, 2}, torch::kInt64), 4);
  EXPECT_TRUE(torch::allclose(p, torch::tensor({0.5, 0.25, 0.25, 0.0}, torch::kFloat64)));
  const torch::Tensor g = torch::tensor({0.25, 0.25, 0.25, 0.25}, torch::kFloat64);
  EXPECT_NEAR(LabelEmd(p, g), 0.25 + 0 + 0 + 0.25, 1e-12);
  EXPECT_NEAR(MixingCoefficient(0.5, 0.25), std::pow(0.25, 0.25), 1e-12);
  EXPECT_NEAR(MixingCoefficient(2.0, 0.5), 1.0, 1e-12);  // disjoint labels: take Φ_g outright
  EXPECT_NEAR(MixingCoefficient(0.0, 0.25), 0.0, 1e-12);  // identical: keep Φ_i
  EXPECT_LT(MixingCoefficient(0.5, 0.75), MixingCoefficient(0.5, 0.25));  // larger γ, smaller λ
}

TEST(MixupTest, MashedEgoGraphsAveragePositionWise) {
  // Two 1-hop trees of fan-out 2 (3 positions) in one chunk, a third alone in the next; node v
  // embeds as [v] and has label v % 2.
  const torch::Tensor trees = torch::tensor({{0, 1, 2}, {3, 4, -1}, {5, 5, 5}}, torch::kInt64);
  const torch::Tensor emb = torch::arange(6, torch::kFloat32).unsqueeze(1);
  const torch::Tensor labels = torch::tensor({0, 1, 0, 1, 0, 1}, torch::kInt64);
  MashedEgoGraphs m = MashEgoGraphs(trees, emb, labels, 2, /*chunk=*/2, /*first_only=*/false);
  ASSERT_EQ(m.embeddings.sizes(), (std::vector<int64_t>{2, 3, 1}));
  // Chunk 1: centre (0+3)/2, first child (1+4)/2, second child only node 2 is present.
  EXPECT_TRUE(torch::allclose(m.embeddings[0].squeeze(1), torch::tensor({1.5f, 2.5f, 2.0f})));
  EXPECT_TRUE(torch::allclose(m.labels[0], torch::tensor({{0.5f, 0.5f}, {0.5f, 0.5f}, {1.0f, 0.0f}})));
  EXPECT_TRUE(torch::allclose(m.embeddings[1].squeeze(1), torch::tensor({5.0f, 5.0f, 5.0f})));
  // w/o Mixup: each chunk's first tree, one-hot.
  m = MashEgoGraphs(trees, emb, labels, 2, 2, /*first_only=*/true);
  EXPECT_TRUE(torch::allclose(m.embeddings[0].squeeze(1), torch::tensor({0.0f, 1.0f, 2.0f})));
  EXPECT_TRUE(torch::allclose(m.labels[0], torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 0.0f}})));
}

// Both losses against their formulas in double precision, on one-hot and soft targets, and a node
// whose p_y underflows in float: the authors' 1e-7 caps its loss at −log(1e-7) and zeroes its
// gradient, where the cross-entropy charges 200 and pushes with gradient ≈ ±1.
TEST(LossTest, AuthorsCodeLossIsNllOfSoftmaxPlusEpsilon) {
  const torch::Tensor z = torch::tensor({{1.0f, 2.0f, 3.0f}, {0.5f, -1.0f, 2.0f}});
  const torch::Tensor y = torch::tensor({{0.0f, 0.0f, 1.0f}, {0.25f, 0.75f, 0.0f}});
  const torch::Tensor p = torch::softmax(z.to(torch::kFloat64), 1);
  const torch::Tensor yd = y.to(torch::kFloat64);
  const double ce = -(yd * p.log()).sum(1).mean().item<double>();
  const double authors = -(yd * (p + 1e-7).log()).sum(1).mean().item<double>();
  // By hand, row 1: p_2 = e^3 / (e + e^2 + e^3) = 0.66524, so −log p_2 = 0.40761.
  EXPECT_NEAR(-std::log(p[0][2].item<double>()), 0.4076059644, 1e-9);
  EXPECT_NEAR(nn::SoftCrossEntropy(z, y).item<double>(), ce, 1e-6);
  EXPECT_NEAR(AuthorsCodeLoss(z, y).item<double>(), authors, 1e-6);

  // p_1 = e^-200 / (2 + e^-200) underflows to 0 in float32.
  const torch::Tensor wrong = torch::tensor({{0.0f, -200.0f, 0.0f}}).requires_grad_(true);
  const torch::Tensor label = torch::tensor({{0.0f, 1.0f, 0.0f}});
  const torch::Tensor a = AuthorsCodeLoss(wrong, label);
  EXPECT_NEAR(a.item<double>(), -std::log(1e-7), 1e-5);  // 16.118
  a.backward();
  EXPECT_EQ(wrong.grad().abs().max().item<float>(), 0.0f);
  wrong.mutable_grad().zero_();
  const torch::Tensor c = nn::SoftCrossEntropy(wrong, label);
  EXPECT_NEAR(c.item<double>(), 200.0 + std::log(2.0), 1e-4);
  c.backward();
  EXPECT_TRUE(torch::allclose(wrong.grad(), torch::tensor({{0.5f, -1.0f, 0.5f}})));
  // In the batch mean with the first two rows, the capped row weighs 16.118 / 3.
  const torch::Tensor batch = torch::cat({z, wrong.detach()});
  const torch::Tensor labels = torch::cat({y, label});
  EXPECT_NEAR(AuthorsCodeLoss(batch, labels).item<double>(), (2 * authors - std::log(1e-7)) / 3, 1e-5);
}

TEST(EgoTreeTest, ResampledChildrenComeFromTheSourcesChildren) {
  graph::Rng rng(3);
  const torch::Tensor pos = graph::ResampleEgoTreePositions(2, 6, 50, rng);
  ASSERT_EQ(pos.sizes(), (std::vector<int64_t>{50, 43}));
  bool repeated = false;
  for (int64_t i = 0; i < 50; ++i) {
    EXPECT_EQ(pos[i][0].item<int64_t>(), 0);
    for (int64_t p = 0; p < 7; ++p) {
      const int64_t parent = pos[i][p].item<int64_t>();
      for (int c = 1; c <= 6; ++c) {
        const int64_t child = pos[i][6 * p + c].item<int64_t>();
        EXPECT_GE(child, 6 * parent + 1);
        EXPECT_LE(child, 6 * parent + 6);
        if (c > 1 && child == pos[i][6 * p + c - 1].item<int64_t>()) repeated = true;
      }
    }
  }
  EXPECT_TRUE(repeated);  // with replacement
}

// Θ applied only to the nodes the sampled trees touch (sparse rows) gives the centres' outputs
// and Θ's gradient that Θ on every node (dense) gives.
TEST(EgoSageTest, ReducingTouchedNodesMatchesReducingEveryNode) {
  const auto data = fl::testing::CsbmClient(120, 30, 3, 5);
  const torch::Tensor dense = torch::relu(data->data.features - 1.0);
  const nn::NodeFeatures sparse = nn::NodeFeatures::WithSparseCopy(dense, 0.5);
  ASSERT_TRUE(sparse.has_sparse());
  nn::EgoSageOptions o;
  o.hidden = 16;
  o.fanout = 3;
  o.dropout = 0;
  torch::manual_seed(1);
  nn::EgoSage model(o, 30, 3);
  auto theta_grad = [&] {
    for (const auto& p : model.named_parameters())
      if (p.key() == "reduction.weight") return p.value().grad().clone();
    return torch::Tensor();
  };
  std::vector<int64_t> centres = {5, 17, 17, 99};
  torch::Tensor got;
  {
    nn::DropoutSeedScope scope(7);
    got = model.forward_centres(sparse, *data->view, torch::tensor(centres, torch::kInt64)).logits;
  }
  got.sum().backward();
  const torch::Tensor got_grad = theta_grad();
  model.zero_grad();
  uint64_t tree_seed;
  {
    nn::DropoutSeedScope scope(7);
    tree_seed = nn::NextStochasticSeed();
  }
  graph::Rng rng(tree_seed);
  const torch::Tensor trees = graph::SampleEgoTrees(data->data.graph, centres, 2, 3, rng);
  const torch::Tensor valid = trees >= 0;
  const torch::Tensor r = model.Reduce(nn::NodeFeatures(dense), *data->view);
  const torch::Tensor want = model.Personalise(r.index_select(0, trees.clamp_min(0).flatten())
                                                       .reshape({4, model.tree_size(), 16}) *
                                                   valid.unsqueeze(-1).to(torch::kFloat32),
                                               valid)
                                 .logits;
  want.sum().backward();
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(got_grad, theta_grad(), 1e-5, 1e-5));
  EXPECT_GT(got_grad.abs().sum().item<double>(), 0);
}

// Theorem 4.1: with linear SAGE layers the centre's output is the same under any alignment that
// keeps parents and children together; with ReLU between the layers it is not.
// FedEgo w/o EGO (note §8): Θ a 2-layer SAGE over the client's graph, Φ on the centre alone
// (fanout 0). A neighbour's features reach the centre only through Θ.
TEST(EgoSageTest, WithoutEgoGraphsThetaReadsTheNeighbourhood) {
  const auto data = fl::testing::CsbmClient(120, 30, 3, 5);
  const torch::Tensor x = data->data.features.clone();
  int64_t centre = -1, neighbour = -1;
  for (int64_t v = 0; v < 120 && centre < 0; ++v) {
    if (!data->data.graph.neighbors(v).empty()) centre = v, neighbour = data->data.graph.neighbors(v)[0];
  }
  ASSERT_GE(centre, 0);
  torch::Tensor moved = x.clone();
  moved[neighbour] += 3.0;
  for (const bool sage : {true, false}) {
    ASSERT_OK_AND_ASSIGN(nn::EgoSageOptions o,
                         nn::ParseEgoSageSpec(absl::StrCat("ego_sage:hidden=16,layers=1,fanout=0,dropout=0,reduction=",
                                                           sage ? "sage" : "linear")));
    torch::manual_seed(3);
    nn::EgoSage model(o, 30, 3);
    EXPECT_EQ(model.tree_size(), 1);
    const torch::Tensor c = torch::tensor({centre}, torch::kInt64);
    const torch::Tensor a = model.forward_centres(nn::NodeFeatures(x), *data->view, c).logits;
    const torch::Tensor b = model.forward_centres(nn::NodeFeatures(moved), *data->view, c).logits;
    EXPECT_EQ(torch::equal(a, b), !sage) << (sage ? "sage" : "linear");
  }
  EXPECT_FALSE(nn::ParseEgoSageSpec("ego_sage:reduction=gcn").ok());
}

TEST(EgoSageTest, LinearPersonalisationIgnoresTheAlignment) {
  for (const bool inner_relu : {false, true}) {
    nn::EgoSageOptions o;
    o.hidden = 8;
    o.fanout = 3;
    o.dropout = 0;
    o.inner_relu = inner_relu;
    torch::manual_seed(1);
    nn::EgoSage phi(o, 0, 3);
    phi.eval();
    torch::manual_seed(2);
    const torch::Tensor x = torch::randn({1, 13, 8});
    // Swap the first two depth-1 positions together with their children (4-6 and 7-9).
    const torch::Tensor perm = torch::tensor({0, 2, 1, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12}, torch::kInt64);
    const torch::Tensor valid = torch::ones({1, 13}, torch::kBool);
    torch::NoGradGuard no_grad;
    const torch::Tensor a = phi.Personalise(x, valid).logits;
    const torch::Tensor b = phi.Personalise(x.index_select(1, perm), valid).logits;
    EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6)) << inner_relu;  // a tree permutation: same
    // Mashing two trees: mixing them at aligned positions vs. with the second tree permuted.
    const torch::Tensor y = torch::randn({1, 13, 8});
    const torch::Tensor aligned = phi.Personalise((x + y) / 2, valid).logits;
    const torch::Tensor misaligned = phi.Personalise((x + y.index_select(1, perm)) / 2, valid).logits;
    if (inner_relu) {
      EXPECT_FALSE(torch::allclose(aligned, misaligned, 1e-5, 1e-6));
    } else {
      EXPECT_TRUE(torch::allclose(aligned, misaligned, 1e-5, 1e-6));
    }
  }
}

fl::FederationOptions EgoFederation(const FedEgoParams& p = {}) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedego");
  o.spec.set_partitioner("fedego:local_fraction=0.4,local_test_nodes=40,major_classes=2");
  o.spec.set_split("fedego_tail:test=40");
  o.spec.set_model("ego_sage:hidden=32,fanout=3,dropout=0.5,batch=16");
  o.spec.set_clients(3);
  o.spec.set_rounds(8);
  o.spec.set_local_epochs(5);
  o.spec.set_lr(0.01);
  o.spec.set_weight_decay(0);
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::PERSONALIZED);
  o.spec.mutable_eval()->set_weighting(fl::proto::EvalProtocol::UNWEIGHTED);
  o.spec.mutable_eval()->set_round(fl::proto::EvalProtocol::BEST_TEST);
  o.spec.add_method_params()->PackFrom(p);
  return o;
}

TEST(FedEgoTest, FederationScoresBothTestsAndRepeats) {
  std::vector<fl::proto::RoundRecord> rounds;
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a,
                       fl::RunFederation(EgoFederation(), [&](const fl::proto::RoundRecord& r) { rounds.push_back(r); }));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(EgoFederation()));
  ASSERT_EQ(rounds.size(), 8u);
  for (const fl::proto::RoundRecord& r : rounds) EXPECT_TRUE(r.has_global_test_acc());
  EXPECT_GT(a.result().test_acc(), 50.0) << a.result().global_test_acc();  // 4 classes
  EXPECT_GT(a.result().global_test_acc(), 40.0);
  EXPECT_EQ(a.result().test_acc(), b.result().test_acc());
  EXPECT_EQ(a.result().global_test_acc(), b.result().global_test_acc());
  EXPECT_EQ(a.result().bytes_up(), b.result().bytes_up());
  // best_test maximises the two tests independently.
  double best_global = 0;
  for (const fl::proto::RoundRecord& r : rounds) best_global = std::max(best_global, r.global_test_acc());
  EXPECT_EQ(a.result().global_test_acc(), best_global);
}

// Note §12: per round every client uploads Θ_i (d·h + h floats; Cora 734,208) and its mashed
// ego-graphs (per graph, tree-size × (h + C) floats); Table 7's cost columns are these sums.
TEST(FedEgoTest, UploadsAreThetaAndMashedEgoGraphs) {
  std::vector<fl::proto::RoundRecord> rounds;
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r,
                       fl::RunFederation(EgoFederation(), [&](const fl::proto::RoundRecord& x) { rounds.push_back(x); }));
  constexpr int64_t kClients = 3, kFeatures = 16, kHidden = 32, kClasses = 4, kTreeNodes = 1 + 3 + 9,
                    kBatch = 16;
  const int64_t theta_bytes = kClients * (kFeatures * kHidden + kHidden) * 4;
  const int64_t graph_bytes = kTreeNodes * (kHidden + kClasses) * 4;
  // One mashed ego-graph per chunk of `batch` training nodes, the last chunk possibly short
  // (§12.2: about 18 per client on Cora at batch 32).
  ASSERT_OK_AND_ASSIGN(const fl::ResolvedOptions resolved, fl::ResolveOptions(EgoFederation()));
  ASSERT_OK_AND_ASSIGN(const std::vector<fl::ClientShard> shards,
                       fl::LoadClientShards(resolved, {0, 1, 2}));
  int64_t graphs_per_round = 0;
  bool short_last_chunk = false;  // else rounding down would pass too
  for (const fl::ClientShard& shard : shards) {
    const int64_t train = shard.data->split.train.sum().item<int64_t>();
    ASSERT_GT(train, kBatch);
    graphs_per_round += (train + kBatch - 1) / kBatch;
    short_last_chunk |= train % kBatch != 0;
  }
  ASSERT_TRUE(short_last_chunk);
  int64_t theta_total = 0, mashed_total = 0;
  for (const fl::proto::RoundRecord& round : rounds) {
    ASSERT_EQ(round.tensor_bytes_up().size(), 2u) << round.round();
    EXPECT_EQ(round.tensor_bytes_up().at("reduction"), theta_bytes);
    const int64_t mashed = round.tensor_bytes_up().at("mashed");
    EXPECT_EQ(mashed, graphs_per_round * graph_bytes) << round.round();
    EXPECT_LT(round.tensor_bytes_up().at("reduction") + mashed, round.bytes_up());  // framing on top
    theta_total += theta_bytes;
    mashed_total += mashed;
  }
  EXPECT_EQ(r.result().uploaded_tensor_bytes_by_group().at("reduction"), theta_total);
  EXPECT_EQ(r.result().uploaded_tensor_bytes_by_group().at("mashed"), mashed_total);
  EXPECT_EQ(r.result().uploaded_tensor_bytes(), theta_total + mashed_total);
}

// Fig. 5: every client reports λ_i and the weight divergence ‖Φ_i − Φ_g‖ / ‖Φ_g‖ its mixing
// leaves; with λ = 1 the client takes Φ_g outright (divergence 0), with λ = 0 nothing is mixed.
TEST(FedEgoTest, ClientsReportLambdaAndWeightDivergence) {
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult adaptive, fl::RunFederation(EgoFederation()));
  // λ, WD, two distances and three shares per class (4 classes).
  ASSERT_EQ(adaptive.result().final_client_reports().size(), 2u + 2u + 3u * 4u);
  const auto& lambda = adaptive.result().final_client_reports().at("lambda").values();
  const auto& wd = adaptive.result().final_client_reports().at("weight_divergence").values();
  ASSERT_EQ(lambda.size(), 3u);
  ASSERT_EQ(wd.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_GE(lambda[k], 0.0);
    EXPECT_LE(lambda[k], 1.0);
    EXPECT_GT(wd[k], 0.0) << k;  // λ_i < 1: some of Φ_i is left
  }
  FedEgoParams server;
  server.set_fixed_lambda(1);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult taken, fl::RunFederation(EgoFederation(server)));
  for (double d : taken.result().final_client_reports().at("weight_divergence").values()) EXPECT_EQ(d, 0.0);
  FedEgoParams no_pl;
  no_pl.set_fixed_lambda(0);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult unmixed, fl::RunFederation(EgoFederation(no_pl)));
  EXPECT_EQ(unmixed.result().final_client_reports().count("lambda"), 0u);
  // Fig. 7's label shares: distributions, the global truth the same for every client, and each
  // distance the total variation of its shares.
  for (int k = 0; k < 3; ++k) {
    double local = 0, predicted = 0, truth = 0, tv_local = 0, tv_predicted = 0;
    for (int c = 0; c < 4; ++c) {
      const auto share = [&](const std::string& what) {
        return adaptive.result().final_client_reports().at(absl::StrCat(what, "_share.", c)).values(k);
      };
      local += share("local");
      predicted += share("predicted");
      truth += share("global");
      EXPECT_EQ(share("global"), adaptive.result().final_client_reports().at(absl::StrCat("global_share.", c)).values(0));
      tv_local += 0.5 * std::abs(share("local") - share("global"));
      tv_predicted += 0.5 * std::abs(share("predicted") - share("global"));
    }
    EXPECT_NEAR(local, 1, 1e-9);
    EXPECT_NEAR(predicted, 1, 1e-9);
    EXPECT_NEAR(truth, 1, 1e-9);
    EXPECT_NEAR(adaptive.result().final_client_reports().at("label_tv_local").values(k), tv_local, 1e-9);
    EXPECT_NEAR(adaptive.result().final_client_reports().at("label_tv_predicted").values(k), tv_predicted, 1e-9);
  }
  EXPECT_EQ(adaptive.result().final_client_reports().at("lambda").values_size(), 3);
}

TEST(FedEgoTest, WithoutEgoGraphsUploadsOneNodePerChunk) {
  fl::FederationOptions o = EgoFederation();
  o.spec.set_model("ego_sage:hidden=32,layers=1,fanout=0,dropout=0.5,batch=16,reduction=sage");
  o.spec.set_rounds(3);
  std::vector<fl::proto::RoundRecord> rounds;
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o, [&](const fl::proto::RoundRecord& x) { rounds.push_back(x); }));
  EXPECT_GT(r.result().test_acc(), 40.0);
  EXPECT_TRUE(r.result().has_global_test_acc());
  // Θ: two SAGE layers (16 -> 32 with bias and root weight, 32 -> 32 likewise), per client.
  const int64_t theta = 3 * ((16 * 32 * 2 + 32) + (32 * 32 * 2 + 32)) * 4;
  for (const fl::proto::RoundRecord& round : rounds) {
    EXPECT_EQ(round.tensor_bytes_up().at("reduction"), theta);
    EXPECT_EQ(round.tensor_bytes_up().at("mashed") % ((32 + 4) * 4), 0);  // one node per mashed graph
  }
}

// loss: AUTHORS_CODE trains the clients through FedEgo's own loop. Its draws (nodes, trees and
// dropout masks at dropout 0.5) must be fl::LocalModel's: at the code's lr 3e-4 the first round's
// train losses then differ by 7.5e-4 at most (the epsilon, mostly in the loss values of nodes with
// p_y below ~1e-6), where one local epoch less moves them by 0.5 to 0.9 (both measured once).
TEST(FedEgoTest, AuthorsLossChangesTheLossAlone) {
  auto run = [](FedEgoParams::Loss loss) {
    FedEgoParams p;
    if (loss != FedEgoParams::CROSS_ENTROPY) p.set_loss(loss);
    fl::FederationOptions o = EgoFederation(p);
    o.spec.set_rounds(1);
    o.spec.set_lr(3e-4);
    return fl::RunFederation(o);
  };
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult ce, run(FedEgoParams::CROSS_ENTROPY));
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult authors, run(FedEgoParams::AUTHORS_CODE));
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult again, run(FedEgoParams::AUTHORS_CODE));
  ASSERT_EQ(ce.rounds_size(), 1);
  ASSERT_EQ(authors.rounds_size(), 1);
  ASSERT_EQ(authors.rounds(0).clients_size(), 3);
  double largest = 0;
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_TRUE(authors.rounds(0).clients(k).has_train_loss() && ce.rounds(0).clients(k).has_train_loss()) << k;
    const double a = authors.rounds(0).clients(k).train_loss();
    ASSERT_TRUE(std::isfinite(a)) << k;
    largest = std::max(largest, std::abs(a - ce.rounds(0).clients(k).train_loss()));
    EXPECT_EQ(a, again.rounds(0).clients(k).train_loss()) << k;  // repeats bit for bit
  }
  EXPECT_GT(largest, 0.0);  // the option acts
  EXPECT_LT(largest, 5e-3);
}

TEST(FedEgoTest, VariantsChangeWhatTheyName) {
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult full, fl::RunFederation(EgoFederation()));
  FedEgoParams no_pl;
  no_pl.set_fixed_lambda(0);  // w/o PL: no mashed ego-graphs travel
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult local_phi, fl::RunFederation(EgoFederation(no_pl)));
  EXPECT_LT(local_phi.result().bytes_up(), full.result().bytes_up() / 2);
  FedEgoParams no_rl;
  no_rl.set_reduction_averaging(false);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult own_theta, fl::RunFederation(EgoFederation(no_rl)));
  EXPECT_LT(own_theta.result().bytes_up(), full.result().bytes_up());
  FedEgoParams bad;
  bad.set_fixed_lambda(1.5);
  absl::Status s = fl::RunFederation(EgoFederation(bad)).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fixed_lambda"), std::string::npos) << s;
  fl::FederationOptions gcn = EgoFederation();
  gcn.spec.set_model("gcn");
  s = fl::RunFederation(gcn).status();
  EXPECT_NE(s.message().find("ego_sage"), std::string::npos) << s;
}

}  // namespace
}  // namespace fgl::methods::fedego
