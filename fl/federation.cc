#include "fl/federation.h"

#include "absl/strings/str_cat.h"

namespace fgl::fl {

std::string FederationOptions::Fingerprint() const {
  std::string params;
  for (const auto& [k, v] : method_params) absl::StrAppend(&params, k, "=", v, ";");
  return absl::StrCat("dataset=", dataset, "|partitioner=", partitioner, "|clients=", clients,
                      "|partition_seed=", partition_seed, "|split=", split, "|method=", method,
                      "|model=", model, "|shared=", shared_group, "|params=", params,
                      "|local_epochs=", local_epochs, "|lr=", lr, "|wd=", weight_decay,
                      "|fraction=", client_fraction, "|eval=", eval.Card(), "|seed=", seed,
                      "|device=", device);
}

std::string EvalProtocol::Card() const {
  return absl::StrCat("model=",
                      model == Model::kGlobal ? "global" : model == Model::kLocal ? "local" : "personalized",
                      " weighting=", node_weighted ? "node" : "unweighted", " round=",
                      round == Round::kBestVal ? "best_val" : round == Round::kLast ? "last" : "best_test(optimistic)",
                      " dropout_at_eval=", dropout_at_eval ? "on" : "off");
}

}  // namespace fgl::fl
