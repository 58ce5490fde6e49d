// Registration helpers shared by nFedGNN and CNFGNN: the factories of a batched node-level method.
#ifndef FGL_METHODS_NFEDGNN_NFEDGNN_H_
#define FGL_METHODS_NFEDGNN_NFEDGNN_H_

#include <string>

#include "fl/registry.h"
#include "methods/nfedgnn/node_level_federation.h"

namespace fgl::methods::nfedgnn {

// Client and server factories that say the method's users are batched rows (Unimplemented), its
// NfedgnnParams check, and the runner over `make_users`.
fl::MethodFactories NodeLevelMethod(const std::string& name, UserModelsFactory make_users, bool laplacian_allowed);

}  // namespace fgl::methods::nfedgnn

#endif  // FGL_METHODS_NFEDGNN_NFEDGNN_H_
