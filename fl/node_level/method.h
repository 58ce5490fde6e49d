// The registration of a batched node-level method (nFedGNN, CNFGNN): its NfedgnnParams check and
// the runner over the method's user models; per-client factories say the users are batched rows.
#ifndef FGL_FL_NODE_LEVEL_METHOD_H_
#define FGL_FL_NODE_LEVEL_METHOD_H_

#include <string>

#include "fl/node_level/federation.h"
#include "fl/registry.h"

namespace fgl::fl::node_level {

// `laplacian_allowed`: whether NfedgnnParams.laplacian_weight may be non-zero (CNFGNN: no).
MethodFactories NodeLevelMethod(const std::string& name, UserModelsFactory make_users, bool laplacian_allowed);

}  // namespace fgl::fl::node_level

#endif  // FGL_FL_NODE_LEVEL_METHOD_H_
