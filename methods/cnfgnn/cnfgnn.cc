// CNFGNN (Meng et al., KDD 2021) as the nFedGNN paper adapts it (§B.5): nFedGNN without the
// Laplacian term whose users also upload their first-layer maps for averaging every round.
#include "methods/cnfgnn/averaged_user_models.h"
#include "methods/nfedgnn/nfedgnn.h"

namespace fgl::methods::cnfgnn {
namespace {

const fl::MethodRegistrar kRegistrar("cnfgnn", nfedgnn::NodeLevelMethod("cnfgnn", &MakeAveragedUserModels,
                                                                       /*laplacian_allowed=*/false));

}  // namespace
}  // namespace fgl::methods::cnfgnn
