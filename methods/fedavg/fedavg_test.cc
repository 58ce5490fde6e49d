// FedAvg's first global model: one initialisation, or the mean of N independent ones.
#include <cmath>
#include <cstdlib>

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
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=64";
  config.num_features = 200;
  config.num_classes = 4;
  config.spec.set_clients(5);
  config.seed = 7;
  FedAvgParams p;
  p.set_mean_of_client_initialisations(mean);
  config.spec.add_method_params()->PackFrom(p);
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
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().test_acc(), 40.0);  // 4 classes
}

// SGD (with momentum) in place of Adam: the federation learns, and a run resumed from a checkpoint
// (the momentum buffers in the clients' state) repeats the uninterrupted one bit for bit.
TEST(FedAvgTest, SgdWithMomentumLearnsAndResumesBitForBit) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedavg");
  o.spec.set_optimizer(fl::proto::FederationSpec::SGD);
  o.spec.set_momentum(0.9);
  o.spec.set_lr(0.05);
  o.spec.set_rounds(6);
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);  // each client's own model, so its state matters
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult one, fl::RunFederation(o));
  EXPECT_GT(one.result().test_acc(), 40.0);  // 4 classes

  fl::FederationOptions adam = o;
  adam.spec.set_optimizer(fl::proto::FederationSpec::ADAM);
  adam.spec.clear_momentum();
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult other, fl::RunFederation(adam));
  bool differs = false;  // the option reaches the clients
  for (int i = 0; i < one.rounds_size(); ++i) differs |= one.rounds(i).test_acc() != other.rounds(i).test_acc();
  EXPECT_TRUE(differs);

  const std::string dir = std::string(::testing::TempDir()) + "/ckpt_sgd";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  o.checkpoint_dir = dir;
  o.checkpoint_every = 2;
  o.spec.set_rounds(3);  // "interrupted" after round 3; the last checkpoint is round 2
  ASSERT_OK(fl::RunFederation(o).status());
  o.spec.set_rounds(6);
  o.resume = true;
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult resumed, fl::RunFederation(o));
  ASSERT_EQ(resumed.rounds_size(), one.rounds_size());
  for (int i = 0; i < one.rounds_size(); ++i) {
    EXPECT_EQ(resumed.rounds(i).test_acc(), one.rounds(i).test_acc()) << i;
    EXPECT_EQ(resumed.rounds(i).val_acc(), one.rounds(i).val_acc()) << i;
  }
}

}  // namespace
}  // namespace fgl::methods::fedavg
