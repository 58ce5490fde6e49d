// FedTGP's server: trained prototypes land near their classes' local prototypes and farther from
// the others; only prototypes travel.
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/fedtgp/fedtgp.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedtgp {
namespace {

fl::proto::Message Upload(int client, const torch::Tensor& prototypes, const torch::Tensor& counts) {
  fl::proto::Message m;
  m.mutable_header()->set_sender(client);
  fl::AddTensors({{"prototypes", prototypes}, {"counts", counts}}, &m);
  return m;
}

TEST(FedTgpTest, ServerPrototypesSeparateTheClasses) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_classes = 3;
  config.seed = 5;
  FedTgpParams p;
  p.set_server_epochs(300);  // long enough to converge on this toy problem
  config.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedtgp, fl::FindMethod("fedtgp"));
  ASSERT_OK_AND_ASSIGN(auto server, fedtgp.server(config));
  // Two clients; class 2 is held by nobody.
  const torch::Tensor a = torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {0.0f, 0.0f}});
  const torch::Tensor b = torch::tensor({{1.2f, 0.1f}, {0.1f, 1.1f}, {0.0f, 0.0f}});
  ASSERT_OK(server->Accumulate(Upload(0, a, torch::tensor({3.0f, 2.0f, 0.0f}))));
  ASSERT_OK(server->Accumulate(Upload(1, b, torch::tensor({1.0f, 4.0f, 0.0f}))));
  ASSERT_OK(server->FinishRound({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({2, 2}));
  ASSERT_OK_AND_ASSIGN(auto tensors, fl::DecodeTensors(global));
  ASSERT_EQ(tensors.size(), 2u);
  const torch::Tensor g = tensors.at("prototypes");
  EXPECT_TRUE(torch::equal(tensors.at("present"), torch::tensor({1.0f, 1.0f, 0.0f})));
  // Each class's local prototypes are nearer their own global prototype than the other class's.
  for (const torch::Tensor& local : {a, b}) {
    for (int c = 0; c < 2; ++c) {
      EXPECT_LT((local[c] - g[c]).norm().item<float>(), (local[c] - g[1 - c]).norm().item<float>())
          << "class " << c;
    }
  }
  // A malformed upload is refused.
  EXPECT_FALSE(server->Accumulate(Upload(2, torch::zeros({2, 2}), torch::zeros({2}))).ok());
}

// The global prototypes and presence mask after one round of `server` on two clients'
// hand-made prototypes (class 2 held by nobody).
void OneRound(FedTgpParams::Server server, torch::Tensor* prototypes, torch::Tensor* present) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_classes = 3;
  config.seed = 5;
  FedTgpParams p;
  p.set_server(server);
  // Adam moves every weight by about lr a step whichever the loss: it takes many steps for the
  // two losses to part the prototypes visibly.
  p.set_server_epochs(300);
  config.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedtgp, fl::FindMethod("fedtgp"));
  ASSERT_OK_AND_ASSIGN(auto s, fedtgp.server(config));
  ASSERT_OK(s->Accumulate(Upload(0, torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {0.0f, 0.0f}}),
                                 torch::tensor({3.0f, 2.0f, 0.0f}))));
  ASSERT_OK(s->Accumulate(Upload(1, torch::tensor({{1.2f, 0.1f}, {0.1f, 1.1f}, {0.0f, 0.0f}}),
                                 torch::tensor({1.0f, 4.0f, 0.0f}))));
  ASSERT_OK(s->FinishRound({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, s->Broadcast({2, 2}));
  ASSERT_OK_AND_ASSIGN(auto tensors, fl::DecodeTensors(global));
  *prototypes = tensors.at("prototypes");
  *present = tensors.at("present");
}

TEST(FedTgpTest, OpenFglServerDiffersFromThePapersAndRepeats) {
  torch::Tensor paper, paper_present, openfgl, openfgl_present, again, again_present;
  ASSERT_NO_FATAL_FAILURE(OneRound(FedTgpParams::PAPER, &paper, &paper_present));
  ASSERT_NO_FATAL_FAILURE(OneRound(FedTgpParams::OPENFGL, &openfgl, &openfgl_present));
  ASSERT_NO_FATAL_FAILURE(OneRound(FedTgpParams::OPENFGL, &again, &again_present));
  // Same seed, same initial network: what differs is what each server trains on (OpenFGL: class
  // 2's zero rows too) and its margin (OpenFGL's class means are divided by 2^3 more).
  EXPECT_GT((paper - openfgl).abs().max().item<float>(), 1e-3);
  EXPECT_TRUE(openfgl.isfinite().all().item<bool>());
  // OpenFGL broadcasts every class, the nobody-held class 2 included; the paper's server does not.
  EXPECT_TRUE(torch::equal(paper_present, torch::tensor({1.0f, 1.0f, 0.0f})));
  EXPECT_TRUE(torch::equal(openfgl_present, torch::tensor({1.0f, 1.0f, 1.0f})));
  // Deterministic: the same inputs give the same prototypes bit for bit.
  EXPECT_TRUE(torch::equal(openfgl, again));
  EXPECT_TRUE(torch::equal(openfgl_present, again_present));
}

TEST(FedTgpTest, HeterogeneousFederationRunsAndRepeats) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedtgp");
  o.spec.set_model("gcn:layers=2,hidden=64;sage:layers=2,hidden=64;gat:layers=2,heads=1,hidden=64");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(o));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(o));
  EXPECT_GT(a.result().test_acc(), 40.0);
  EXPECT_EQ(a.result().test_acc(), b.result().test_acc());
  // Uploads are prototypes and counts only: far below a 64-hidden model's weights.
  EXPECT_LT(a.rounds(a.rounds_size() - 1).bytes_up(), 4 * 3 * (4 * 64 + 4) * 4);
}

}  // namespace
}  // namespace fgl::methods::fedtgp
