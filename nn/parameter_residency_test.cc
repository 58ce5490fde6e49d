// ParameterResidency: release and reallocation keep the TensorImpls and shapes; parked values and
// spilled moments come back bit for bit; a transition from the wrong phase is a CHECK.
#include "nn/parameter_residency.h"

#include <vector>

#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::nn {
namespace {

using Phase = ParameterResidency::Phase;

std::vector<torch::Tensor> Parameters() {
  torch::manual_seed(11);
  return {torch::randn({64, 300}).requires_grad_(), torch::randn({7}).requires_grad_()};
}

std::vector<torch::Tensor> Clones(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& t : ts) out.push_back(t.detach().clone());
  return out;
}

void ExpectSameBits(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].sizes(), b[i].sizes()) << i;
    EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  }
}

TEST(ParameterResidencyTest, ReleaseAndReallocateKeepTensorImplsAndShapes) {
  const std::vector<torch::Tensor> params = Parameters();
  std::vector<const void*> impls;
  for (const torch::Tensor& p : params) impls.push_back(p.unsafeGetTensorImpl());
  ParameterResidency r(params, ParameterResidencyOptions(::testing::TempDir()));
  EXPECT_EQ(r.phase(), Phase::kResident);
  ASSERT_THAT(r.Release(), ::fgl::testing::IsOk());
  EXPECT_EQ(r.phase(), Phase::kReleased);
  for (const torch::Tensor& p : params) EXPECT_EQ(p.numel(), 0);
  ASSERT_THAT(r.Reallocate(), ::fgl::testing::IsOk());
  EXPECT_EQ(r.phase(), Phase::kResident);
  EXPECT_EQ(params[0].sizes(), (std::vector<int64_t>{64, 300}));
  EXPECT_EQ(params[1].sizes(), (std::vector<int64_t>{7}));
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].unsafeGetTensorImpl(), impls[i]);
    EXPECT_TRUE(params[i].requires_grad());
  }
  ASSERT_THAT(r.Reallocate(), ::fgl::testing::IsOk());  // resident: nothing to do
  EXPECT_EQ(r.phase(), Phase::kResident);
}

TEST(ParameterResidencyTest, ParkedValuesComeBackBitForBit) {
  const std::vector<torch::Tensor> params = Parameters();
  const std::vector<torch::Tensor> values = Clones(params);
  const void* impl = params[0].unsafeGetTensorImpl();
  ParameterResidency r(params, ParameterResidencyOptions(::testing::TempDir()));
  ASSERT_THAT(r.Park(), ::fgl::testing::IsOk());
  EXPECT_EQ(r.phase(), Phase::kParked);
  EXPECT_TRUE(r.parked());
  for (const torch::Tensor& p : params) EXPECT_EQ(p.numel(), 0);
  ASSERT_OK_AND_ASSIGN(std::vector<torch::Tensor> read, r.ReadParked());
  ExpectSameBits(read, values);
  EXPECT_EQ(r.phase(), Phase::kParked);  // reading changes nothing
  ASSERT_THAT(r.Unpark(), ::fgl::testing::IsOk());
  EXPECT_EQ(r.phase(), Phase::kUnparked);
  ExpectSameBits(params, values);
  EXPECT_EQ(params[0].unsafeGetTensorImpl(), impl);
  ASSERT_THAT(r.Park(), ::fgl::testing::IsOk());  // freed again; the file still holds them
  EXPECT_EQ(r.phase(), Phase::kParked);
  for (const torch::Tensor& p : params) EXPECT_EQ(p.numel(), 0);
  ASSERT_OK_AND_ASSIGN(read, r.ReadParked());
  ExpectSameBits(read, values);
  r.Drop();
  EXPECT_EQ(r.phase(), Phase::kResident);
  EXPECT_EQ(params[0].sizes(), values[0].sizes());
  EXPECT_EQ(params[0].unsafeGetTensorImpl(), impl);
}

TEST(ParameterResidencyTest, AFailedParkChangesNothing) {
  const std::vector<torch::Tensor> params = Parameters();
  const std::vector<torch::Tensor> values = Clones(params);
  ParameterResidency r(params, ParameterResidencyOptions("/nonexistent-fgl-dir"));
  EXPECT_THAT(r.Park(), ::fgl::testing::StatusIs(absl::StatusCode::kUnavailable,
                                                 ::testing::HasSubstr("/nonexistent-fgl-dir")));
  EXPECT_EQ(r.phase(), Phase::kResident);
  ExpectSameBits(params, values);
}

TEST(ParameterResidencyTest, SpilledMomentsComeBackBitForBit) {
  const std::vector<torch::Tensor> params = Parameters();
  Adam adam(params, torch::optim::AdamOptions(0.01));
  for (int t = 0; t < 2; ++t) {
    for (const torch::Tensor& p : params) p.mutable_grad() = torch::randn(p.sizes());
    adam.step();
  }
  auto moments = [&] {
    std::vector<torch::Tensor> out;
    for (const torch::Tensor& p : params) {
      const auto& s = static_cast<const torch::optim::AdamParamState&>(
          *adam.state().at(c10::guts::to_string(p.unsafeGetTensorImpl())));
      out.push_back(s.exp_avg().clone());
      out.push_back(s.exp_avg_sq().clone());
    }
    return out;
  };
  const std::vector<torch::Tensor> before = moments();
  ParameterResidency r(params, ParameterResidencyOptions(::testing::TempDir())
                                   .spill_moments(true)
                                   .spill_min_bytes(1024));  // the [64, 300] moments only
  r.set_optimizer(&adam);
  ASSERT_THAT(r.Release(), ::fgl::testing::IsOk());
  EXPECT_TRUE(r.moments_spilled());
  EXPECT_EQ(moments()[0].numel(), 0);
  EXPECT_EQ(moments()[2].numel(), 7);  // too small to spill
  ASSERT_THAT(r.Reallocate(), ::fgl::testing::IsOk());
  EXPECT_FALSE(r.moments_spilled());
  ExpectSameBits(moments(), before);
  // Without spill_moments, Release leaves them in memory.
  ParameterResidency keep(params, ParameterResidencyOptions(::testing::TempDir()));
  keep.set_optimizer(&adam);
  ASSERT_THAT(keep.Release(), ::fgl::testing::IsOk());
  EXPECT_FALSE(keep.moments_spilled());
}

TEST(ParameterResidencyTest, TransitionsFromTheWrongPhaseAreChecked) {
  const std::vector<torch::Tensor> params = Parameters();
  ParameterResidency r(params, ParameterResidencyOptions(::testing::TempDir()));
  EXPECT_THROW((void)r.ReadParked(), c10::Error);
  EXPECT_THROW((void)r.Unpark(), c10::Error);
  EXPECT_THROW(r.Drop(), c10::Error);
  ASSERT_THAT(r.Release(), ::fgl::testing::IsOk());
  EXPECT_THROW((void)r.Release(), c10::Error);
  EXPECT_THROW((void)r.Park(), c10::Error);
  ASSERT_THAT(r.Reallocate(), ::fgl::testing::IsOk());
  ASSERT_THAT(r.Park(), ::fgl::testing::IsOk());
  EXPECT_THROW((void)r.Reallocate(), c10::Error);
  EXPECT_THROW((void)r.Release(), c10::Error);
}

}  // namespace
}  // namespace fgl::nn
