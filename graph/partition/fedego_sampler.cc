#include "graph/partition/fedego_sampler.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/random.h"

namespace fgl::graph {
namespace {

// Draws `count` distinct elements of `from` uniformly (partial Fisher-Yates on a copy).
std::vector<int64_t> SampleWithoutReplacement(std::vector<int64_t> from, int64_t count, Rng& rng) {
  count = std::min<int64_t>(count, from.size());
  for (int64_t i = 0; i < count; ++i) {
    std::swap(from[i], from[i + rng.UniformInt(from.size() - i)]);
  }
  from.resize(count);
  return from;
}

}  // namespace

absl::StatusOr<Partition> FedEgoSampler::Run(const Dataset& dataset, int num_clients,
                                             uint64_t seed) const {
  if (auto s = CheckClientCount(dataset, num_clients, "fedego"); !s.ok()) return s;
  const FedEgoSamplerOptions& o = options_;
  if (o.global_test_fraction < 0 || o.global_test_fraction >= 1 || o.local_fraction <= 0 ||
      o.local_fraction > 1 || o.major_rate < 0 || o.major_rate > 1 || o.local_test_nodes < 0 ||
      o.major_classes < 0 || o.major_classes > dataset.num_classes) {
    return absl::InvalidArgumentError(absl::StrCat("fedego: invalid options ", Fingerprint(),
                                                   " for ", dataset.num_classes, " classes"));
  }
  const CsrGraph& g = dataset.graph;
  const int64_t n = g.num_nodes();
  const int64_t* y = dataset.labels.data_ptr<int64_t>();
  std::vector<int64_t> active;
  for (int64_t v = 0; v < n; ++v)
    if (g.degree(v) > 0) active.push_back(v);
  const int64_t n_total = static_cast<int64_t>(active.size());
  Rng rng(seed, "fedego");

  Partition out;
  std::vector<char> removed(n, 0);
  for (int64_t v = 0; v < n; ++v) removed[v] = g.degree(v) == 0;
  out.server_nodes =
      SampleWithoutReplacement(active, static_cast<int64_t>(o.global_test_fraction * n_total), rng);
  for (int64_t v : out.server_nodes) removed[v] = 1;
  std::vector<char> global_test(removed);

  const int64_t s = static_cast<int64_t>(o.local_fraction * n_total);
  std::vector<char> in_client(n, 0);
  for (int k = 0; k < num_clients; ++k) {
    const std::vector<char>& excluded = o.reuse_local_test_nodes ? global_test : removed;
    std::vector<int64_t> classes(dataset.num_classes);
    for (int64_t c = 0; c < dataset.num_classes; ++c) classes[c] = c;
    std::vector<int64_t> major = SampleWithoutReplacement(classes, o.major_classes, rng);
    std::vector<char> is_major(dataset.num_classes, 0);
    for (int64_t c : major) is_major[c] = 1;
    std::vector<int64_t> major_pool;
    for (int64_t v = 0; v < n; ++v)
      if (!excluded[v] && is_major[y[v]]) major_pool.push_back(v);
    const int64_t major_num =
        std::min<int64_t>(static_cast<int64_t>(s * o.major_rate), major_pool.size());
    std::vector<int64_t> picked = SampleWithoutReplacement(major_pool, major_num, rng);
    std::vector<char> taken(n, 0);
    for (int64_t v : picked) taken[v] = 1;
    std::vector<int64_t> rest_pool;
    for (int64_t v = 0; v < n; ++v)
      if (!excluded[v] && !taken[v]) rest_pool.push_back(v);
    std::vector<int64_t> rest = SampleWithoutReplacement(rest_pool, s - major_num, rng);
    picked.insert(picked.end(), rest.begin(), rest.end());
    // Drop nodes with no neighbour inside the client.
    for (int64_t v : picked) in_client[v] = 1;
    std::vector<int64_t> client;
    for (int64_t v : picked) {
      for (int64_t u : g.neighbors(v)) {
        if (in_client[u]) {
          client.push_back(v);
          break;
        }
      }
    }
    for (int64_t v : picked) in_client[v] = 0;
    rng.Shuffle(client);
    if (static_cast<int64_t>(client.size()) <= o.local_test_nodes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "fedego: client ", k, " kept ", client.size(), " nodes, not more than its ",
          o.local_test_nodes, " local test nodes; use fewer clients or reuse_local_test_nodes"));
    }
    for (size_t i = client.size() - o.local_test_nodes; i < client.size(); ++i) removed[client[i]] = 1;
    out.clients.push_back(std::move(client));
  }
  return out;
}

std::string FedEgoSampler::Fingerprint() const {
  const FedEgoSamplerOptions& o = options_;
  return absl::StrCat("fedego(global_test_fraction=", o.global_test_fraction,
                      ",local_fraction=", o.local_fraction, ",major_classes=", o.major_classes,
                      ",major_rate=", o.major_rate, ",local_test_nodes=", o.local_test_nodes,
                      ",reuse_local_test_nodes=", o.reuse_local_test_nodes, ")");
}

}  // namespace fgl::graph
