// Status-returning wrappers over igraph (Louvain, Leiden) and METIS. Only these touch the C
// libraries: both libraries' error codes become absl::Status, and both are seeded explicitly per
// call.
#ifndef FGL_THIRD_PARTY_COMMUNITY_DETECTION_H_
#define FGL_THIRD_PARTY_COMMUNITY_DETECTION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace fgl::third_party {

// Louvain communities (igraph_community_multilevel, final level) of the undirected graph with
// `num_nodes` nodes and edges (src[i], dst[i]), each undirected edge listed once.
// Returns a community id per node, ids in [0, #communities). Deterministic for a seed;
// calls are serialised because igraph's RNG is global. complexity: ~O(E log N).
absl::StatusOr<std::vector<int64_t>> LouvainCommunities(int64_t num_nodes,
                                                        absl::Span<const int64_t> src,
                                                        absl::Span<const int64_t> dst,
                                                        double resolution, uint64_t seed);

// Leiden communities (igraph_community_leiden) of the same graph, optimising modularity with
// resolution `resolution` (node weights are the degrees and igraph's resolution parameter is
// resolution / 2E, so resolution 1 is the modularity multilevel Louvain optimises). Starts from
// singletons (no starting membership); `beta` is the randomness of the refinement step (igraph's
// default 0.01); `iterations` >= 1 Leiden iterations (igraph's "< 0: until stable" is refused:
// igraph 0.10.2 then stops after one). igraph's global RNG (node visiting order, refinement) is
// seeded from `seed` under the same lock as Louvain, so a seed gives one partition. Ids in
// [0, #communities). complexity: ~O(iterations * E).
absl::StatusOr<std::vector<int64_t>> LeidenCommunities(int64_t num_nodes,
                                                       absl::Span<const int64_t> src,
                                                       absl::Span<const int64_t> dst,
                                                       double resolution, double beta,
                                                       int iterations, uint64_t seed);

// METIS k-way (or recursive bisection) partition of a symmetric CSR graph without self-loops.
// Returns a part id in [0, num_parts) per node.
absl::StatusOr<std::vector<int64_t>> MetisParts(absl::Span<const int64_t> row_ptr,
                                                absl::Span<const int64_t> col, int num_parts,
                                                bool recursive_bisection, uint64_t seed);

}  // namespace fgl::third_party

#endif  // FGL_THIRD_PARTY_COMMUNITY_DETECTION_H_
