// One client's data on a small csbm graph, and a method config, for method unit tests.
#ifndef FGL_FL_TESTING_CLIENT_DATA_H_
#define FGL_FL_TESTING_CLIENT_DATA_H_

#include <memory>

#include "fl/algorithm.h"
#include "fl/simulator.h"

namespace fgl::fl::testing {

// A csbm graph (homophily 0.85) with a 20/40/40 stratified split, on the CPU.
std::shared_ptr<ClientData> CsbmClient(int64_t num_nodes, int64_t num_features, int64_t num_classes,
                                       uint64_t seed, int id = 0);

// A 6-round federation of 4 Louvain clients on a 600-node csbm graph (4 classes, 16 features),
// no partition cache: what method tests run end to end.
FederationOptions SmallFederation(const std::string& method);

// A config for calling a method's factories directly: model "gcn", 3 local epochs, lr 0.01,
// weight decay 5e-4, Adam, client_fraction 1 (the spec's resolved defaults where a unit test
// relies on them); rounds and clients unset (0: the method does not check them), features and
// classes 0. Set what the test needs on top.
MethodConfig TestMethodConfig();

}  // namespace fgl::fl::testing

#endif  // FGL_FL_TESTING_CLIENT_DATA_H_
