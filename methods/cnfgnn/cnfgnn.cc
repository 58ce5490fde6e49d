// CNFGNN (Meng et al., KDD 2021) as the nFedGNN paper adapts it (§B.5): nFedGNN without the
// Laplacian term whose users also upload their first-layer maps for averaging every round.
#include "fl/node_level/method.h"
#include "methods/cnfgnn/averaged_user_models.h"

namespace fgl::methods::cnfgnn {
namespace {

const fl::MethodRegistrar kRegistrar("cnfgnn", fl::node_level::NodeLevelMethod("cnfgnn", &MakeAveragedUserModels,
                                                                              /*laplacian_allowed=*/false));

}  // namespace
}  // namespace fgl::methods::cnfgnn
