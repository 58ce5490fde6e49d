// SCAFFOLD's control variates: the client update c_k <- c_k - c + (w - w_k) / (E lr) and the
// server's plain mean, checked on two rounds of two clients.
#include "fl/registry.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::scaffold {
namespace {

using ::testing::HasSubstr;
using ::fgl::testing::StatusIs;

std::map<std::string, torch::Tensor> Take(const std::string& prefix, fl::proto::Message m) {
  auto t = fl::TakeTensors(prefix, &m);
  CHECK(t.ok()) << t.status();
  return *t;
}

std::map<std::string, torch::Tensor> Model(const fl::proto::Message& m) {
  fl::proto::Message copy = m;
  CHECK(fl::TakeTensors("control.", &copy).ok());
  return *fl::DecodeTensors(copy);
}

fl::MethodConfig Config() {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.spec.set_local_epochs(3);
  config.spec.set_lr(0.01);
  config.seed = 4;
  return config;
}

TEST(ScaffoldTest, ControlVariateUpdateAndServerMean) {
  const fl::MethodConfig config = Config();
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("scaffold"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  std::vector<std::unique_ptr<fl::ClientAlgorithm>> clients;
  for (int k = 0; k < 2; ++k) {
    ASSERT_OK_AND_ASSIGN(auto c, f.client(fl::testing::CsbmClient(200, 8, 3, 10 + k, k), config));
    clients.push_back(std::move(c));
  }
  const double scale = 1.0 / (3 * 0.01);
  std::vector<std::map<std::string, torch::Tensor>> control(2);
  for (int round = 1; round <= 2; ++round) {
    const fl::RoundInfo info{round, static_cast<uint64_t>(round)};
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast(info));
    const auto w = Model(global);
    const auto c = Take("control.", global);
    ASSERT_EQ(c.size(), w.size());
    if (round == 1) {
      for (const auto& [name, t] : c) EXPECT_EQ(t.abs().max().item<float>(), 0.f) << name;
    }
    std::vector<std::map<std::string, torch::Tensor>> uploaded;
    for (int k = 0; k < 2; ++k) {
      ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, clients[k]->Train(global, info));
      const auto wk = Model(reply);
      const auto ck = Take("control.", reply);
      for (const auto& [name, t] : w) {
        const torch::Tensor previous = round == 1 ? torch::zeros_like(t) : control[k].at(name);
        const torch::Tensor want = previous - c.at(name) + (t - wk.at(name)) * scale;
        EXPECT_TRUE(torch::allclose(ck.at(name), want, 1e-4, 1e-5)) << "round " << round << " " << name;
        EXPECT_GT((t - wk.at(name)).abs().max().item<float>(), 0.f);  // the client did train
      }
      control[k] = ck;
      uploaded.push_back(ck);
      ASSERT_OK(server->Accumulate(reply));
    }
    ASSERT_OK(server->FinishRound(info));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message next, server->Broadcast(info));
    const auto c_next = Take("control.", next);
    for (const auto& [name, t] : c_next) {
      EXPECT_TRUE(torch::allclose(t, (uploaded[0].at(name) + uploaded[1].at(name)) / 2, 1e-5, 1e-6)) << name;
    }
  }
  // A reply without its control variates is refused.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({3, 3}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, clients[0]->Train(global, {3, 3}));
  fl::proto::Message stripped = reply;
  ASSERT_OK(fl::TakeTensors("control.", &stripped).status());
  EXPECT_FALSE(server->Accumulate(stripped).ok());
}

// A restored client continues as the saved one (its control variates included); a state that
// lacks one of them is refused, naming it.
TEST(ScaffoldTest, RestoredClientContinuesAndIncompleteStateIsRefused) {
  const fl::MethodConfig config = Config();
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("scaffold"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  auto data = fl::testing::CsbmClient(200, 8, 3, 10, 0);
  ASSERT_OK_AND_ASSIGN(auto client, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK(client->Train(global, {1, 1}).status());
  ASSERT_OK_AND_ASSIGN(fl::proto::Message state, client->SaveState());
  ASSERT_OK_AND_ASSIGN(auto restored, f.client(data, config));
  ASSERT_OK(restored->RestoreState(state));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message a, client->Train(global, {2, 2}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message b, restored->Train(global, {2, 2}));
  const auto ta = *fl::DecodeTensors(a), tb = *fl::DecodeTensors(b);
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, t] : ta) EXPECT_TRUE(torch::equal(t, tb.at(name))) << name;

  fl::proto::Message incomplete = state;
  auto controls = *fl::TakeTensors("control.", &incomplete);
  controls.erase(controls.begin());
  fl::AddTensors(fl::WithPrefix("control.", fl::NamedTensors(controls.begin(), controls.end())), &incomplete);
  ASSERT_OK_AND_ASSIGN(auto refused, f.client(data, config));
  EXPECT_THAT(refused->RestoreState(incomplete), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("control.")));
}

}  // namespace
}  // namespace fgl::methods::scaffold
