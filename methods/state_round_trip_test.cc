// Every registered method (and every plug-in on FedAvg) survives a checkpoint: its server's and
// clients' SaveState, restored into fresh instances, continue exactly as the uninterrupted run.
// The list comes from the registry, so a method added later is tested without editing this file.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "methods/test_configs.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods {
namespace {

class StateRoundTripTest : public ::testing::TestWithParam<testing::TestConfig> {};

// Equal, or both NaN (a client without a report).
bool SameScore(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

TEST_P(StateRoundTripTest, ResumesBitIdentically) {
  // Each client scores its own model, with dropout on, so that client state and the evaluation's
  // randomness must both resume.
  ASSERT_OK_AND_ASSIGN(const fl::MethodFactories factories, fl::FindMethod(GetParam().method));
  fl::FederationOptions o = testing::SmallRun(GetParam(), 4);
  // The batched node-level methods score without dropout (nFedGNN §B.4); their training dropout
  // must still resume.
  if (!factories.federation) o.spec.mutable_eval()->set_dropout_at_eval(true);
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult whole, fl::RunFederation(o));

  const std::string dir = std::string(::testing::TempDir()) + "/round_trip_" + GetParam().Name();
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  o.checkpoint_dir = dir;
  o.checkpoint_every = 2;
  o.spec.set_rounds(2);  // stops after the round-2 checkpoint
  ASSERT_OK(fl::RunFederation(o).status());
  o.spec.set_rounds(4);
  o.resume = true;  // fresh server and clients, restored from the checkpoint
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult resumed, fl::RunFederation(o));

  ASSERT_EQ(resumed.rounds_size(), whole.rounds_size());
  for (int r = 2; r < whole.rounds_size(); ++r) {
    // FedEgo scores a global test graph (else absent on both sides, and the check below is moot).
    if (GetParam().method == "fedego") EXPECT_TRUE(whole.rounds(r).has_global_test_acc());
    EXPECT_EQ(resumed.rounds(r).has_global_test_acc(), whole.rounds(r).has_global_test_acc()) << "round " << r + 1;
    EXPECT_EQ(resumed.rounds(r).val_acc(), whole.rounds(r).val_acc()) << "round " << r + 1;
    EXPECT_EQ(resumed.rounds(r).test_acc(), whole.rounds(r).test_acc()) << "round " << r + 1;
    EXPECT_TRUE(SameScore(resumed.rounds(r).global_test_acc(), whole.rounds(r).global_test_acc()))
        << "round " << r + 1 << ": " << resumed.rounds(r).global_test_acc() << " vs "
        << whole.rounds(r).global_test_acc();
    EXPECT_EQ(resumed.rounds(r).bytes_up(), whole.rounds(r).bytes_up()) << "round " << r + 1;
    EXPECT_EQ(resumed.rounds(r).bytes_down(), whole.rounds(r).bytes_down()) << "round " << r + 1;
    ASSERT_EQ(resumed.rounds(r).clients_size(), whole.rounds(r).clients_size());
    for (int k = 0; k < whole.rounds(r).clients_size(); ++k) {
      EXPECT_EQ(resumed.rounds(r).clients(k).test_acc(), whole.rounds(r).clients(k).test_acc())
          << "round " << r + 1 << " client " << k;
    }
  }
}

// NaN (a client without a report) equals NaN here.
bool SameReports(const google::protobuf::Map<std::string, fl::proto::ClientValues>& a,
                 const google::protobuf::Map<std::string, fl::proto::ClientValues>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, values] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.values_size() != values.values_size()) return false;
    for (int k = 0; k < values.values_size(); ++k) {
      if (!SameScore(values.values(k), it->second.values(k))) return false;
    }
  }
  return true;
}

// A checkpoint taken after the last round: the resumed run only scores it, and still ends with
// the uninterrupted run's tensor bytes and client reports (FedEgo's Figs. 5 and 7 read them).
TEST_P(StateRoundTripTest, ResumingAtTheLastRoundKeepsBytesAndReports) {
  fl::FederationOptions o = testing::SmallRun(GetParam(), 2);
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult whole, fl::RunFederation(o));
  const std::string dir = std::string(::testing::TempDir()) + "/last_round_" + GetParam().Name();
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  o.checkpoint_dir = dir;
  o.checkpoint_every = 2;
  ASSERT_OK(fl::RunFederation(o).status());
  o.resume = true;
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult resumed, fl::RunFederation(o));
  EXPECT_EQ(resumed.result().test_acc(), whole.result().test_acc());
  EXPECT_TRUE(SameScore(resumed.result().global_test_acc(), whole.result().global_test_acc()))
      << resumed.result().global_test_acc() << " vs " << whole.result().global_test_acc();
  EXPECT_EQ(resumed.result().has_global_test_acc(), whole.result().has_global_test_acc());
  using ByGroup = std::map<std::string, int64_t>;
  EXPECT_EQ(ByGroup(resumed.result().uploaded_tensor_bytes_by_group().begin(),
                    resumed.result().uploaded_tensor_bytes_by_group().end()),
            ByGroup(whole.result().uploaded_tensor_bytes_by_group().begin(),
                    whole.result().uploaded_tensor_bytes_by_group().end()));
  EXPECT_TRUE(SameReports(resumed.result().final_client_reports(), whole.result().final_client_reports()));
}

INSTANTIATE_TEST_SUITE_P(EveryRegisteredMethod, StateRoundTripTest, ::testing::ValuesIn(testing::EveryConfig()),
                         [](const ::testing::TestParamInfo<testing::TestConfig>& info) { return info.param.Name(); });

}  // namespace
}  // namespace fgl::methods
