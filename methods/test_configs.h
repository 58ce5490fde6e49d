// The configurations the cross-method tests run: every registered method and FedAvg with every
// plug-in (from the registry, so new methods are covered without edits), plus the non-default
// branches the tables use (GCFL+ splits, FedSage+'s classifier phase, FedTAD's variants, the
// plug-in on each base of Table 3).
#ifndef FGL_METHODS_TEST_CONFIGS_H_
#define FGL_METHODS_TEST_CONFIGS_H_

#include <string>
#include <vector>

#include "fl/simulator.h"

namespace fgl::methods::testing {

struct TestConfig {
  std::string method;
  std::string params;  // a textproto of the method's (first) parameter type; "" for defaults
  std::string Name() const;  // a gtest-safe name
};

std::vector<TestConfig> EveryConfig();

// A small federation (fl::testing::SmallFederation) with a model every method accepts and the
// config's parameters packed.
fl::FederationOptions SmallRun(const TestConfig& config, int rounds);

}  // namespace fgl::methods::testing

#endif  // FGL_METHODS_TEST_CONFIGS_H_
