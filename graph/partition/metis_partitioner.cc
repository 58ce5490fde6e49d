#include "graph/partition/metis_partitioner.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/random.h"
#include "third_party/community_detection.h"

namespace fgl::graph {

absl::StatusOr<Partition> MetisPartitioner::Run(const Dataset& dataset, int num_clients,
                                                uint64_t seed) const {
  if (auto s = CheckClientCount(dataset, num_clients, "metis"); !s.ok()) return s;
  const CsrGraph& g = dataset.graph;
  const int64_t n = g.num_nodes();
  auto parts = third_party::MetisParts(
      absl::Span<const int64_t>(g.row_ptr_data(), n + 1),
      absl::Span<const int64_t>(g.col_data(), g.num_entries()), num_clients,
      options_.recursive_bisection, Rng::Derive(seed, "metis"));
  if (!parts.ok()) return parts.status();
  Partition out;
  out.clients.resize(num_clients);
  for (int64_t v = 0; v < n; ++v) out.clients[(*parts)[v]].push_back(v);
  for (int k = 0; k < num_clients; ++k) {
    if (out.clients[k].empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("metis: client ", k, " of ", num_clients, " received no node"));
    }
  }
  return out;
}

std::string MetisPartitioner::Fingerprint() const {
  return absl::StrCat("metis(recursive_bisection=", options_.recursive_bisection, ")");
}

}  // namespace fgl::graph
