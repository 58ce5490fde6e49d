#include "third_party/community_detection.h"

#include <igraph/igraph.h>
#include <metis.h>

#include <limits>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgl::third_party {
namespace {

std::mutex& IgraphMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

absl::Status IgraphError(igraph_error_t code, const char* what) {
  return absl::InternalError(absl::StrCat("igraph ", what, " failed: ", igraph_strerror(code)));
}

// Frees an igraph object on scope exit.
template <typename T, void (*Destroy)(T*)>
struct IgraphGuard {
  T* obj;
  ~IgraphGuard() { Destroy(obj); }
};

}  // namespace

absl::StatusOr<std::vector<int64_t>> LouvainCommunities(int64_t num_nodes,
                                                        absl::Span<const int64_t> src,
                                                        absl::Span<const int64_t> dst,
                                                        double resolution, uint64_t seed) {
  if (src.size() != dst.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Louvain: src has ", src.size(), " entries, dst ", dst.size()));
  }
  if (num_nodes < 0) return absl::InvalidArgumentError("Louvain: negative num_nodes");
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= num_nodes || dst[i] < 0 || dst[i] >= num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat("Louvain: edge ", i, " (", src[i], ", ",
                                                     dst[i], ") out of range [0, ", num_nodes,
                                                     ")"));
    }
  }
  if (!(resolution > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("Louvain: resolution ", resolution, " <= 0"));
  }
  std::lock_guard<std::mutex> lock(IgraphMutex());
  // The default handler aborts the process; we turn errors into Status instead.
  igraph_error_handler_t* old_handler = igraph_set_error_handler(igraph_error_handler_printignore);
  struct RestoreHandler {
    igraph_error_handler_t* h;
    ~RestoreHandler() { igraph_set_error_handler(h); }
  } restore{old_handler};
  igraph_rng_seed(igraph_rng_default(), static_cast<igraph_uint_t>(seed));

  igraph_vector_int_t edges;
  if (igraph_error_t e = igraph_vector_int_init(&edges, 2 * static_cast<igraph_integer_t>(src.size())))
    return IgraphError(e, "vector init");
  IgraphGuard<igraph_vector_int_t, igraph_vector_int_destroy> edges_guard{&edges};
  for (size_t i = 0; i < src.size(); ++i) {
    VECTOR(edges)[2 * i] = src[i];
    VECTOR(edges)[2 * i + 1] = dst[i];
  }
  igraph_t graph;
  if (igraph_error_t e = igraph_create(&graph, &edges, num_nodes, IGRAPH_UNDIRECTED))
    return IgraphError(e, "create");
  IgraphGuard<igraph_t, igraph_destroy> graph_guard{&graph};
  igraph_vector_int_t membership;
  if (igraph_error_t e = igraph_vector_int_init(&membership, 0))
    return IgraphError(e, "vector init");
  IgraphGuard<igraph_vector_int_t, igraph_vector_int_destroy> membership_guard{&membership};
  if (igraph_error_t e = igraph_community_multilevel(&graph, /*weights=*/nullptr, resolution,
                                                     &membership, /*memberships=*/nullptr,
                                                     /*modularity=*/nullptr)) {
    return IgraphError(e, "community_multilevel");
  }
  std::vector<int64_t> out(num_nodes);
  for (int64_t v = 0; v < num_nodes; ++v) out[v] = VECTOR(membership)[v];
  return out;
}

absl::StatusOr<std::vector<int64_t>> LeidenCommunities(int64_t num_nodes,
                                                       absl::Span<const int64_t> src,
                                                       absl::Span<const int64_t> dst,
                                                       double resolution, double beta,
                                                       int iterations, uint64_t seed) {
  if (src.size() != dst.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Leiden: src has ", src.size(), " entries, dst ", dst.size()));
  }
  if (num_nodes < 0) return absl::InvalidArgumentError("Leiden: negative num_nodes");
  // Node weights are the degrees (modularity); a loop (u, u) adds 2, as igraph counts it.
  std::vector<double> degree(num_nodes, 0.0);
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= num_nodes || dst[i] < 0 || dst[i] >= num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat("Leiden: edge ", i, " (", src[i], ", ",
                                                     dst[i], ") out of range [0, ", num_nodes,
                                                     ")"));
    }
    degree[src[i]] += 1;
    degree[dst[i]] += 1;
  }
  if (!(resolution > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("Leiden: resolution ", resolution, " <= 0"));
  }
  if (!(beta > 0)) return absl::InvalidArgumentError(absl::StrCat("Leiden: beta ", beta, " <= 0"));
  if (iterations < 1) {
    return absl::InvalidArgumentError(absl::StrCat("Leiden: iterations ", iterations, " < 1"));
  }
  std::vector<int64_t> out(num_nodes);
  if (src.empty()) {
    // No edges: every node is its own community (igraph would divide by 2E = 0).
    for (int64_t v = 0; v < num_nodes; ++v) out[v] = v;
    return out;
  }
  std::lock_guard<std::mutex> lock(IgraphMutex());
  igraph_error_handler_t* old_handler = igraph_set_error_handler(igraph_error_handler_printignore);
  struct RestoreHandler {
    igraph_error_handler_t* h;
    ~RestoreHandler() { igraph_set_error_handler(h); }
  } restore{old_handler};
  igraph_rng_seed(igraph_rng_default(), static_cast<igraph_uint_t>(seed));

  igraph_t graph;
  {  // The edge list is freed once the graph holds its own copy, before Leiden runs.
    igraph_vector_int_t edges;
    if (igraph_error_t e =
            igraph_vector_int_init(&edges, 2 * static_cast<igraph_integer_t>(src.size())))
      return IgraphError(e, "vector init");
    IgraphGuard<igraph_vector_int_t, igraph_vector_int_destroy> edges_guard{&edges};
    for (size_t i = 0; i < src.size(); ++i) {
      VECTOR(edges)[2 * i] = src[i];
      VECTOR(edges)[2 * i + 1] = dst[i];
    }
    if (igraph_error_t e = igraph_create(&graph, &edges, num_nodes, IGRAPH_UNDIRECTED))
      return IgraphError(e, "create");
  }
  IgraphGuard<igraph_t, igraph_destroy> graph_guard{&graph};
  igraph_vector_t node_weights;
  igraph_vector_view(&node_weights, degree.data(), num_nodes);
  // start = false: igraph starts from singletons and only sizes `membership`.
  igraph_vector_int_t membership;
  if (igraph_error_t e = igraph_vector_int_init(&membership, num_nodes))
    return IgraphError(e, "vector init");
  IgraphGuard<igraph_vector_int_t, igraph_vector_int_destroy> membership_guard{&membership};
  const double two_m = 2.0 * static_cast<double>(src.size());
  if (igraph_error_t e = igraph_community_leiden(
          &graph, /*edge_weights=*/nullptr, &node_weights, resolution / two_m, beta,
          /*start=*/false, iterations, &membership, /*nb_clusters=*/nullptr, /*quality=*/nullptr)) {
    return IgraphError(e, "community_leiden");
  }
  for (int64_t v = 0; v < num_nodes; ++v) out[v] = VECTOR(membership)[v];
  return out;
}

absl::StatusOr<std::vector<int64_t>> MetisParts(absl::Span<const int64_t> row_ptr,
                                                absl::Span<const int64_t> col, int num_parts,
                                                bool recursive_bisection, uint64_t seed) {
  if (row_ptr.empty()) return absl::InvalidArgumentError("METIS: row_ptr is empty");
  const int64_t n = static_cast<int64_t>(row_ptr.size()) - 1;
  if (num_parts < 1) return absl::InvalidArgumentError(absl::StrCat("METIS: num_parts ", num_parts));
  if (n > std::numeric_limits<idx_t>::max() ||
      static_cast<int64_t>(col.size()) > std::numeric_limits<idx_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("METIS: graph with ", n, " nodes and ", col.size(),
                     " entries exceeds METIS's ", sizeof(idx_t) * 8, "-bit idx_t"));
  }
  if (row_ptr.back() != static_cast<int64_t>(col.size())) {
    return absl::InvalidArgumentError("METIS: row_ptr.back() != col.size()");
  }
  std::vector<int64_t> out(n, 0);
  if (num_parts == 1 || n == 0) return out;
  // Debian's METIS uses 32-bit idx_t; convert explicitly.
  std::vector<idx_t> xadj(row_ptr.begin(), row_ptr.end());
  std::vector<idx_t> adjncy(col.begin(), col.end());
  std::vector<idx_t> part(n);
  idx_t nvtxs = static_cast<idx_t>(n), ncon = 1, nparts = num_parts, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  const int rc = recursive_bisection
                     ? METIS_PartGraphRecursive(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr,
                                                nullptr, nullptr, &nparts, nullptr, nullptr,
                                                options, &objval, part.data())
                     : METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr,
                                           nullptr, nullptr, &nparts, nullptr, nullptr, options,
                                           &objval, part.data());
  if (rc != METIS_OK) {
    const char* what = rc == METIS_ERROR_INPUT    ? "input error"
                       : rc == METIS_ERROR_MEMORY ? "out of memory"
                                                  : "error";
    return absl::InternalError(absl::StrCat("METIS_PartGraph", recursive_bisection ? "Recursive" : "Kway",
                                            " returned ", rc, " (", what, ")"));
  }
  for (int64_t v = 0; v < n; ++v) out[v] = part[v];
  return out;
}

}  // namespace fgl::third_party
