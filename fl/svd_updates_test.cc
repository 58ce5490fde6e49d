// SVD-compressed updates: what the energy threshold keeps, exact reconstruction at full energy,
// and refusal of malformed updates.
#include "fl/svd_updates.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::fl {
namespace {

using ::testing::HasSubstr;

TEST(SvdUpdatesTest, EnergyKeepsTheLeadingFactorsAndRebuilds) {
  torch::manual_seed(1);
  // A rank-2 update with one dominant direction, plus a vector that travels whole.
  const torch::Tensor a = torch::randn({40, 1}), b = torch::randn({1, 30});
  const torch::Tensor c = torch::randn({40, 1}), d = torch::randn({1, 30});
  const NamedTensors held = {{"w", torch::randn({40, 30})}, {"b", torch::randn({30})}};
  const NamedTensors now = {{"w", held[0].second + 10 * a.matmul(b) + 0.5 * c.matmul(d)},
                            {"b", held[1].second + 1}};
  proto::Message low, full;
  AddSvdUpdate(now, held, 0.9, &low);
  AddSvdUpdate(now, held, 0.9999, &full);
  ASSERT_OK_AND_ASSIGN(auto low_tensors, DecodeTensors(low));
  EXPECT_EQ(low_tensors.at("w#u").size(1), 1);  // the dominant direction alone
  EXPECT_EQ(low_tensors.count("b#delta"), 1u);
  ASSERT_OK_AND_ASSIGN(auto full_tensors, DecodeTensors(full));
  EXPECT_EQ(full_tensors.at("w#u").size(1), 2);
  EXPECT_LT(low.ByteSizeLong(), full.ByteSizeLong());
  ASSERT_OK_AND_ASSIGN(const NamedTensors rebuilt, ApplySvdUpdate(full, held, "test"));
  EXPECT_TRUE(torch::allclose(rebuilt[0].second, now[0].second, 1e-4, 1e-4));
  EXPECT_TRUE(torch::equal(rebuilt[1].second, now[1].second));
  ASSERT_OK_AND_ASSIGN(const NamedTensors approx, ApplySvdUpdate(low, held, "test"));
  // 90% of the energy kept: the residual is the second direction's share, about 5% in norm.
  const double residual = (approx[0].second - now[0].second).norm().item<double>();
  EXPECT_LT(residual, 0.1 * (now[0].second - held[0].second).norm().item<double>());
  EXPECT_GT(residual, 0);
}

TEST(SvdUpdatesTest, AFullRankUpdateTravelsWhole) {
  torch::manual_seed(2);
  const NamedTensors held = {{"w", torch::zeros({4, 4})}};
  const NamedTensors now = {{"w", torch::eye(4)}};  // every singular value equal: k = 4
  proto::Message m;
  AddSvdUpdate(now, held, 0.95, &m);
  ASSERT_EQ(m.tensors_size(), 1);
  EXPECT_EQ(m.tensors(0).name(), "w#delta");
}

TEST(SvdUpdatesTest, MalformedUpdatesAreRefusedByName) {
  const NamedTensors held = {{"w", torch::zeros({6, 5})}};
  proto::Message missing;
  EXPECT_THAT(ApplySvdUpdate(missing, held, "client 3").status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("client 3: tensor 'w': no update")));
  proto::Message misfit;
  AddTensors({{"w#u", torch::ones({6, 2})}, {"w#sv", torch::ones({3, 5})}}, &misfit);
  EXPECT_THAT(ApplySvdUpdate(misfit, held, "x").status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not fit")));
  proto::Message extra;
  AddTensors({{"w#delta", torch::ones({6, 5})}, {"v#delta", torch::ones({2})}}, &extra);
  EXPECT_THAT(ApplySvdUpdate(extra, held, "x").status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name no model tensor")));
  proto::Message nan;
  AddTensors({{"w#delta", torch::full({6, 5}, std::nan(""))}}, &nan);
  EXPECT_FALSE(ApplySvdUpdate(nan, held, "x").ok());
}

}  // namespace
}  // namespace fgl::fl
