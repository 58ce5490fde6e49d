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
  if (!partition.client_splits.empty()) {
    if (partition.client_splits.size() != partition.clients.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("partition: ", partition.client_splits.size(), " client splits for ",
                       partition.num_clients(), " clients"));
    }
    for (int k = 0; k < partition.num_clients(); ++k) {
      const NodeSplit& s = partition.client_splits[k];
      const int64_t n = static_cast<int64_t>(partition.clients[k].size());
      for (const torch::Tensor* mask : {&s.train, &s.val, &s.test}) {
        if (!mask->defined() || mask->dtype() != torch::kBool || mask->dim() != 1 ||
            mask->size(0) != n) {
          return absl::InvalidArgumentError(absl::StrCat(
              "partition: client ", k, "'s split masks must be bool [", n, "]"));
        }
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
