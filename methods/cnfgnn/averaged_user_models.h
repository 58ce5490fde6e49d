// CNFGNN's users as the nFedGNN paper adapts it (§B.5): after every round each user uploads its
// whole first-layer map, the server averages them, and every user continues from the average with
// its own persistent Adam state.
#ifndef FGL_METHODS_CNFGNN_AVERAGED_USER_MODELS_H_
#define FGL_METHODS_CNFGNN_AVERAGED_USER_MODELS_H_

#include <memory>

#include "fl/node_level/user_models.h"

namespace fgl::methods::cnfgnn {

// Exact and compressed: a user whose feature r is zero has had gradient wd·θ̄[r] on row r in every
// round, the same for all such users, so one "background" Adam state per row stands for all of
// them; per-(user, row) states exist only where x_i[r] != 0. Memory is (nnz(X) + d)·H per tensor
// instead of n·d·H, and the average equals the dense per-user algorithm's up to float rounding
// (averaged_user_models_test).
std::unique_ptr<fl::node_level::UserModels> MakeAveragedUserModels(const fl::node_level::UserFeatures& features,
                                                            const fl::node_level::UserModelOptions& options);

}  // namespace fgl::methods::cnfgnn

#endif  // FGL_METHODS_CNFGNN_AVERAGED_USER_MODELS_H_
