// Recorded runs are valid only while the code computes the same numbers. Each registered method
// (and FedAvg with each plug-in) runs a tiny deterministic federation; a fingerprint of everything
// it reports must equal the line for the method's current result version in
// methods/result_fingerprints.txt. A change that moves a method's numbers fails here until its
// result version is bumped (FGL_REGISTER_METHOD's last argument) and a line for the new version is
// appended; records of the older version then read "stale" in reports.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "methods/test_configs.h"
#include "graph/random.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods {
namespace {

// Fingerprint by "<version> <params>" ("fedprox@1", "fedtad@1 loss_form: PAPER"), from
// methods/result_fingerprints.txt: lines "<version> <fingerprint>[ <params textproto>]".
std::map<std::string, std::string> Expected() {
  std::map<std::string, std::string> out;
  std::ifstream in("methods/result_fingerprints.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string version, fingerprint, params;
    fields >> version >> fingerprint;
    std::getline(fields >> std::ws, params);
    out[params.empty() ? version : absl::StrCat(version, " ", params)] = fingerprint;
  }
  return out;
}

class ResultFingerprintTest : public ::testing::TestWithParam<testing::TestConfig> {};

TEST_P(ResultFingerprintTest, MatchesTheRecordedVersion) {
  const fl::FederationOptions o = testing::SmallRun(GetParam(), 3);
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult r, fl::RunFederation(o));
  std::string all;
  for (const fl::proto::RoundRecord& round : r.rounds()) {
    absl::StrAppend(&all, absl::StrFormat("%d %.17g %.17g %d %d|", round.round(), round.val_acc(), round.test_acc(),
                                          round.bytes_up(), round.bytes_down()));
    if (round.has_train_loss()) absl::StrAppend(&all, absl::StrFormat("%.17g|", round.train_loss()));
    // Accuracies are argmaxes and survive small numeric changes; the reported training losses do not.
    for (const fl::proto::ClientRoundRecord& c : round.clients()) {
      // A client that did not train has no loss: "nan", as the fingerprints were first recorded.
      const double loss = c.has_train_loss() ? c.train_loss() : std::numeric_limits<double>::quiet_NaN();
      absl::StrAppend(&all, absl::StrFormat("%.17g %.17g,", c.test_acc(), loss));
    }
  }
  absl::StrAppend(&all, r.final_global());
  const std::string fingerprint = absl::StrFormat("%016x", graph::Fnv1a64(all.data(), all.size()));

  ASSERT_OK_AND_ASSIGN(const fl::MethodFactories m, fl::FindMethod(GetParam().method));
  const std::map<std::string, std::string> expected = Expected();
  const std::string params = GetParam().params;
  auto it = expected.find(params.empty() ? m.version : absl::StrCat(m.version, " ", params));
  ASSERT_NE(it, expected.end()) << "methods/result_fingerprints.txt has no line for " << m.version << " " << params
                                << "; append: " << m.version << " " << fingerprint
                                << (params.empty() ? "" : " ") << params;
  EXPECT_EQ(it->second, fingerprint)
      << GetParam().method << " " << params << " computes different numbers than its result version " << m.version
      << " recorded: bump the version where it registers and append a line for the new version";
}

INSTANTIATE_TEST_SUITE_P(EveryRegisteredMethod, ResultFingerprintTest, ::testing::ValuesIn(testing::EveryConfig()),
                         [](const ::testing::TestParamInfo<testing::TestConfig>& info) { return info.param.Name(); });

}  // namespace
}  // namespace fgl::methods
