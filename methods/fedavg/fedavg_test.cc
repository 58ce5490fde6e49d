// FedAvg's first global model: one initialisation, or the mean of N independent ones.
#include <cmath>

#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/fedavg/fedavg.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedavg {
namespace {

fl::MethodConfig Config(bool mean) {
  fl::MethodConfig config;
  config.model_spec = "gcn:layers=2,hidden=64";
  config.num_features = 200;
  config.num_classes = 4;
  config.num_clients = 5;
  config.seed = 7;
  FedAvgParams p;
  p.set_mean_of_client_initialisations(mean);
  config.params.emplace_back().PackFrom(p);
  return config;
}

// The mean of 5 independent initialisations: its spread is about 1/sqrt(5) of one's.
TEST(FedAvgTest, MeanOfClientInitialisationsShrinksTheFirstModel) {
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedavg"));
  auto first = [&](bool mean) {
    auto server = f.server(Config(mean));
    EXPECT_TRUE(server.ok());
    return *fl::DecodeTensors(*(*server)->Broadcast({1, 1}));
  };
  const auto one = first(false), mean = first(true);
  ASSERT_EQ(one.size(), mean.size());
  for (const auto& [name, t] : one) {
    if (name.find("weight") == std::string::npos) continue;
    const double ratio = mean.at(name).std().item<double>() / t.std().item<double>();
    EXPECT_NEAR(ratio, 1 / std::sqrt(5.0), 0.06) << name;
  }
  EXPECT_TRUE(torch::equal(first(true).begin()->second, mean.begin()->second));  // deterministic
}

TEST(FedAvgTest, FederationFromTheMeanOfInitialisationsLearns) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedavg");
  FedAvgParams p;
  p.set_mean_of_client_initialisations(true);
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.test_acc, 40.0);  // 4 classes
}

}  // namespace
}  // namespace fgl::methods::fedavg
