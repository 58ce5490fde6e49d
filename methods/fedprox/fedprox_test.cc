// FedProx: the proximal weight pulls local weights toward the global model; FedEgo's code form
// (per-element Frobenius norm, adaptive mu) trains without NaN at w = w_g and moves mu.
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/fedprox/fedprox.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedprox {
namespace {

struct Trained {
  double distance = 0;  // ||w_local - w_global||^2 after one round
  double mu = 0;        // the client's weight after it
};

Trained TrainOnce(const FedProxParams& p) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.spec.set_local_epochs(5);
  config.spec.add_method_params()->PackFrom(p);
  auto f = fl::FindMethod("fedprox");
  CHECK(f.ok());
  auto server = f->server(config);
  auto client = f->client(fl::testing::CsbmClient(200, 8, 3, 10), config);
  CHECK(server.ok() && client.ok());
  const fl::RoundInfo info{1, 1};
  auto global = (*server)->Broadcast(info);
  auto reply = (*client)->Train(*global, info);
  CHECK(reply.ok()) << reply.status();
  const auto w = *fl::DecodeTensors(*global), local = *fl::DecodeTensors(*reply);
  Trained t;
  for (const auto& [name, g] : w) t.distance += (local.at(name) - g).pow(2).sum().item<double>();
  auto state = (*client)->SaveState();
  CHECK(state.ok());
  t.mu = state->scalars().at("fedprox.mu");
  return t;
}

TEST(FedProxTest, ProximalWeightKeepsClientsNearTheGlobalModel) {
  FedProxParams weak, strong;
  weak.set_mu(0);
  strong.set_mu(100);
  EXPECT_LT(TrainOnce(strong).distance, 0.5 * TrainOnce(weak).distance);
  EXPECT_EQ(TrainOnce(strong).mu, 100);  // not adaptive: unchanged
}

TEST(FedProxTest, CodeFormIsFiniteAndAdaptsMu) {
  FedProxParams code;
  code.set_mu(1);
  code.set_proximal(FedProxParams::NORM_PER_ELEMENT);
  code.set_adaptive_mu(true);
  const Trained t = TrainOnce(code);
  EXPECT_TRUE(std::isfinite(t.distance));
  EXPECT_GT(t.distance, 0);
  // The first step's term is 0 (w = w_g), so the cross-entropy exceeds 5 mu prox: mu grows to 10.
  EXPECT_NE(t.mu, 1);
  // Detached (the code): the term moves mu but not the weights, which train as without it.
  code.set_proximal_gradient(false);
  FedProxParams none;
  none.set_mu(0);
  EXPECT_DOUBLE_EQ(TrainOnce(code).distance, TrainOnce(none).distance);
  EXPECT_NE(TrainOnce(code).mu, 1);
}

}  // namespace
}  // namespace fgl::methods::fedprox
