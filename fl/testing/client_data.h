// One client's data on a small csbm graph, for method unit tests.
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

}  // namespace fgl::fl::testing

#endif  // FGL_FL_TESTING_CLIENT_DATA_H_
