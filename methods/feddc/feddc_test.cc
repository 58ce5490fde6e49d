// FedDC: the server averages theta + h, the drift lags one round (OpenFGL), and the penalty starts
// in round 2.
#include "fl/registry.h"
#include "fl/simulator.h"
#include "methods/feddc/feddc.pb.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::feddc {
namespace {

std::map<std::string, torch::Tensor> Take(const std::string& prefix, fl::proto::Message* m) {
  auto t = fl::TakeTensors(prefix, m);
  CHECK(t.ok()) << t.status();
  return *t;
}

TEST(FedDcTest, DriftLagsAndServerAveragesDriftCorrectedModels) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("feddc"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, f.client(fl::testing::CsbmClient(200, 8, 3, 10), config));
  std::map<std::string, torch::Tensor> first_update;
  for (int round = 1; round <= 2; ++round) {
    const fl::RoundInfo info{round, static_cast<uint64_t>(round)};
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast(info));
    fl::proto::Message g = global;
    Take("update.", &g);
    const auto w = *fl::DecodeTensors(g);
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, info));
    fl::proto::Message r = reply;
    const auto drift = Take("drift.", &r);
    const auto update = Take("update.", &r);
    const auto theta = *fl::DecodeTensors(r);
    for (const auto& [name, t] : theta) {
      EXPECT_TRUE(torch::allclose(update.at(name), t - w.at(name), 1e-5, 1e-6)) << name;
      // h lags: 0 after round 1, the round-1 update after round 2.
      const torch::Tensor want = round == 1 ? torch::zeros_like(t) : first_update.at(name);
      EXPECT_TRUE(torch::allclose(drift.at(name), want, 1e-5, 1e-6)) << name;
    }
    if (round == 1) first_update = update;
    ASSERT_OK(server->Accumulate(reply));
    ASSERT_OK(server->FinishRound(info));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message next, server->Broadcast(info));
    const auto mean_update = Take("update.", &next);
    const auto averaged = *fl::DecodeTensors(next);
    for (const auto& [name, t] : theta) {
      EXPECT_TRUE(torch::allclose(averaged.at(name), t + drift.at(name), 1e-5, 1e-6)) << name;
      EXPECT_TRUE(torch::allclose(mean_update.at(name), update.at(name), 1e-5, 1e-6)) << name;
    }
  }
}

// FedDC's own code: no lag (h is the sum of the updates so far) and the control state
// c_k <- c_k - u - (theta - w) / (lr E), u the server's mean of the c_k (one client: its own).
TEST(FedDcTest, CodeCorrectionKeepsAControlState) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  FedDcParams p;
  p.set_correction(FedDcParams::FEDDC_CODE);
  config.spec.add_method_params()->PackFrom(p);
  const double beta = 1.0 / (config.spec.lr() * config.spec.local_epochs());
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("feddc"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, f.client(fl::testing::CsbmClient(200, 8, 3, 10), config));
  std::map<std::string, torch::Tensor> drift_sum, control;
  for (int round = 1; round <= 2; ++round) {
    const fl::RoundInfo info{round, static_cast<uint64_t>(round)};
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast(info));
    fl::proto::Message g = global;
    const auto u = Take("update.", &g);
    const auto w = *fl::DecodeTensors(g);
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, info));
    fl::proto::Message r = reply;
    const auto drift = Take("drift.", &r);
    const auto c = Take("update.", &r);
    const auto theta = *fl::DecodeTensors(r);
    for (const auto& [name, t] : theta) {
      const torch::Tensor delta = t - w.at(name);
      drift_sum[name] = round == 1 ? delta : drift_sum.at(name) + delta;
      const torch::Tensor previous = round == 1 ? torch::zeros_like(t) : control.at(name);
      EXPECT_TRUE(torch::allclose(drift.at(name), drift_sum.at(name), 1e-5, 1e-6)) << name;
      EXPECT_TRUE(torch::allclose(c.at(name), previous - u.at(name) - beta * delta, 1e-4, 1e-5)) << name;
      if (round == 2) {
        EXPECT_TRUE(torch::allclose(u.at(name), previous, 1e-5, 1e-6)) << name;
      }
    }
    control = c;
    ASSERT_OK(server->Accumulate(reply));
    ASSERT_OK(server->FinishRound(info));
  }
  // It trains differently from OpenFGL's correction.
  fl::FederationOptions o = fl::testing::SmallFederation("feddc");
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult openfgl, fl::RunFederation(o));
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult code, fl::RunFederation(o));
  EXPECT_NE(openfgl.final_global(), code.final_global());
  EXPECT_GT(code.result().test_acc(), 40.0);  // 4 classes
}

}  // namespace
}  // namespace fgl::methods::feddc
