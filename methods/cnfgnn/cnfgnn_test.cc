#include "fl/simulator.h"
#include "gtest/gtest.h"
#include "methods/cnfgnn/averaged_user_models.h"
#include "fl/node_level/params.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::cnfgnn {
namespace {

using fl::node_level::UserFeatures;
using fl::node_level::UserModelOptions;

// The compressed users (one background Adam state per feature) against the algorithm as written:
// every user holds a dense W_i and b_i with its own Adam, steps, and all take the server's average.
TEST(AveragedUserModels, EqualTheDenseAlgorithm) {
  const int64_t n = 12, d = 7, h = 4;
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({n, d}) * (torch::rand({n, d}) < 0.4).to(torch::kFloat);
  const UserFeatures f = UserFeatures::FromDense(x);
  UserModelOptions o;
  o.latent_width = h;
  o.adam = {0.05, 5e-4};
  o.seed = 11;
  std::unique_ptr<fl::node_level::UserModels> compressed = MakeAveragedUserModels(f, o);

  UserModelOptions shared = o;
  shared.shared_init = true;
  torch::Tensor w = fl::node_level::InitialUserWeights(f, shared).unsqueeze(0).repeat({n, 1, 1}).requires_grad_(true);
  torch::Tensor b = torch::zeros({n, h}, torch::requires_grad());
  // Adam is elementwise: one optimiser over [n, d, h] is n users' own optimisers.
  torch::optim::Adam adam({w, b}, torch::optim::AdamOptions(0.05).weight_decay(5e-4));
  for (int step = 0; step < 5; ++step) {
    const torch::Tensor g = torch::randn({n, h});
    compressed->Step(f.values, g);
    w.mutable_grad() = x.unsqueeze(2) * g.unsqueeze(1);  // x_iᵀ g_i per user
    b.mutable_grad() = g.clone();
    adam.step();
    {
      torch::NoGradGuard no_grad;
      w.copy_(w.mean(0, true).expand_as(w));
      b.copy_(b.mean(0, true).expand_as(b));
    }
    torch::NoGradGuard no_grad;
    const torch::Tensor dense_latents = torch::bmm(x.unsqueeze(1), w).squeeze(1) + b;
    EXPECT_TRUE(torch::allclose(compressed->Latents(f.values), dense_latents, 1e-5, 1e-6)) << "step " << step;
  }
  EXPECT_EQ(compressed->model_floats_per_user(), d * h + h);
}

TEST(CnfgnnRun, UploadsLatentsAndModels) {
  fl::FederationOptions o;
  o.spec.set_dataset("csbm:num_nodes=60,num_classes=3,num_features=9");
  o.spec.set_partitioner("node_level");
  o.spec.set_clients(60);
  o.spec.set_split("stratified:train=0.2,val=0.3");
  o.spec.set_method("cnfgnn");
  o.spec.set_model("gcn:layers=2,hidden=16,dropout=0.5");
  o.spec.set_rounds(2);
  o.spec.set_local_epochs(1);
  o.cache_dir = "none";
  // §B.7: n · (16d + 16 bias + 16 latent) floats per round.
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_EQ(r.result().bytes_up(), 60 * (16 * 9 + 16 + 16) * 4 * 2);
  o.spec.set_model("gat:layers=2,heads=8,hidden=16");
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult gat, fl::RunFederation(o));
  EXPECT_EQ(gat.result().bytes_up(), 60 * (128 * 9 + 128) * 4 * 2);  // n · (128d + 128 latent), no user bias

  fl::node_level::NfedgnnParams p;
  p.set_laplacian_weight(1);
  o.spec.add_method_params()->PackFrom(p);
  EXPECT_THAT(fl::RunFederation(o).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("no Laplacian")));
  // Every CNFGNN user starts from the averaged map: asking for independent draws is refused.
  p.Clear();
  p.set_user_init(fl::node_level::NfedgnnParams::INDEPENDENT);
  o.spec.clear_method_params();
  o.spec.add_method_params()->PackFrom(p);
  EXPECT_THAT(fl::RunFederation(o).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("user_init SHARED")));
}

}  // namespace
}  // namespace fgl::methods::cnfgnn
