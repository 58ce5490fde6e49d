#include "graph/partition/partitioner.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgl::graph {

absl::Status CheckClientCount(const Dataset& dataset, int num_clients, const std::string& who) {
  if (num_clients < 1) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": num_clients = ", num_clients, " < 1"));
  }
  if (num_clients > dataset.num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": num_clients = ", num_clients,
                                                   " exceeds the ", dataset.num_nodes(),
                                                   " nodes of ", dataset.name));
  }
  return absl::OkStatus();
}

absl::Status ValidatePartition(const Partition& partition, int64_t num_nodes, bool disjoint) {
  std::vector<int> held(num_nodes, 0);
  for (int k = 0; k < partition.num_clients(); ++k) {
    for (int64_t v : partition.clients[k]) {
      if (v < 0 || v >= num_nodes) {
        return absl::InvalidArgumentError(
            absl::StrCat("partition: client ", k, " holds node ", v, " outside [0, ", num_nodes, ")"));
      }
      if (++held[v] > 1 && disjoint) {
        return absl::InvalidArgumentError(
            absl::StrCat("partition: node ", v, " is held by more than one client"));
      }
    }
  }
  for (int64_t v : partition.server_nodes) {
    if (v < 0 || v >= num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("partition: server node ", v, " outside [0, ", num_nodes, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace fgl::graph
