#include "graph/partition/louvain_partitioner.h"

#include <algorithm>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/random.h"
#include "third_party/community_detection.h"

namespace fgl::graph {

absl::StatusOr<Partition> PackCommunities(absl::Span<const int64_t> community, int num_clients,
                                          int delta, bool rebalance) {
  const int64_t n = static_cast<int64_t>(community.size());
  const int64_t k = num_clients;
  if (k < 1 || k > n) {
    return absl::InvalidArgumentError(absl::StrCat("Louvain packing: ", k, " clients for ", n, " nodes"));
  }
  // Groups in order of first appearance scanning nodes 0..N-1, members ascending.
  std::unordered_map<int64_t, size_t> group_of;
  std::vector<std::vector<int64_t>> groups;
  for (int64_t v = 0; v < n; ++v) {
    auto [it, inserted] = group_of.emplace(community[v], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(v);
  }
  // Cut oversized groups; the remainder is appended as a new group and cut again later.
  const int64_t group_len_max = std::max<int64_t>(1, n / k - delta);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (static_cast<int64_t>(groups[g].size()) > group_len_max) {
      std::vector<int64_t> rest(groups[g].begin() + group_len_max, groups[g].end());
      groups[g].resize(group_len_max);
      groups.push_back(std::move(rest));
    }
  }
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return groups[a].size() > groups[b].size(); });

  const int64_t cap = n / k;
  // Each owner's groups, in the order dealt; sizes kept alongside.
  std::vector<std::vector<std::vector<int64_t>>> owned(k);
  std::vector<int64_t> size(k, 0);
  std::vector<int> owners(k);
  for (int i = 0; i < k; ++i) owners[i] = i;
  size_t ind = 0;
  for (size_t g : order) {
    const int64_t len = static_cast<int64_t>(groups[g].size());
    while (owners.size() >= 2 && size[owners[ind]] >= cap) {
      owners.erase(owners.begin() + ind);
      ind %= owners.size();
    }
    size_t tries = 0;
    while (size[owners[ind]] + len >= cap + delta) {
      ind = (ind + 1) % owners.size();
      if (++tries > owners.size()) {
        // No owner has room: OpenFGL loops 1000 times and then takes some owner; we take the
        // smallest, which is what that fallback intends.
        ind = 0;
        for (size_t i = 1; i < owners.size(); ++i)
          if (size[owners[i]] < size[owners[ind]]) ind = i;
        break;
      }
    }
    owned[owners[ind]].push_back(std::move(groups[g]));
    size[owners[ind]] += len;
  }
  if (rebalance) {
    // The packing bounds owners above (cap + delta) but not below: an owner left short when the
    // groups run out can end far under N/K. Move whole groups (else the tail of the last group)
    // from the largest owner to the smallest until all lie in [cap - delta, cap + delta]. Each
    // move shrinks sum |size - cap|, so this ends.
    while (true) {
      const int s = std::min_element(size.begin(), size.end()) - size.begin();
      const int l = std::max_element(size.begin(), size.end()) - size.begin();
      if (size[s] >= cap - delta && size[l] <= cap + delta) break;
      int64_t m = std::min(size[l] - cap, cap - size[s]);
      if (m <= 0) m = (size[l] - size[s]) / 2;
      if (m <= 0) break;
      std::vector<std::vector<int64_t>>& from = owned[l];
      int best = -1;
      for (size_t i = 0; i < from.size(); ++i) {
        const int64_t gs = static_cast<int64_t>(from[i].size());
        if (gs <= m && (best < 0 || gs > static_cast<int64_t>(from[best].size()))) best = static_cast<int>(i);
      }
      std::vector<int64_t> moved;
      if (best >= 0) {
        moved = std::move(from[best]);
        from.erase(from.begin() + best);
      } else {
        std::vector<int64_t>& last = from.back();
        moved.assign(last.end() - m, last.end());
        last.resize(last.size() - m);
      }
      size[l] -= static_cast<int64_t>(moved.size());
      size[s] += static_cast<int64_t>(moved.size());
      owned[s].push_back(std::move(moved));
    }
  }
  Partition out;
  out.clients.resize(k);
  for (int i = 0; i < k; ++i) {
    for (const auto& g : owned[i]) out.clients[i].insert(out.clients[i].end(), g.begin(), g.end());
    if (out.clients[i].empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("Louvain packing left client ", i, " of ", k, " empty (", n, " nodes)"));
    }
  }
  return out;
}

namespace {

void ClassCoverageFix(const Dataset& dataset, Partition& p) {
  const int64_t* y = dataset.labels.data_ptr<int64_t>();
  const int k = p.num_clients();
  for (int64_t c = 0; c < dataset.num_classes; ++c) {
    auto count = [&](int owner) {
      return std::count_if(p.clients[owner].begin(), p.clients[owner].end(),
                           [&](int64_t v) { return y[v] == c; });
    };
    for (int i = 0; i < k; ++i) {
      if (count(i) >= 2) continue;
      for (int j = 0; j < k; ++j) {
        if (j == i || count(j) <= 2) continue;
        std::vector<int64_t>& donor = p.clients[j];
        auto last = std::find_if(donor.rbegin(), donor.rend(), [&](int64_t v) { return y[v] == c; });
        const int64_t v = *last;
        donor.erase(std::next(last).base());
        p.clients[i].push_back(v);
      }
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> LouvainPartitioner::Communities(const Dataset& dataset,
                                                                     uint64_t seed) const {
  const CsrGraph& g = dataset.graph;
  std::vector<int64_t> src, dst;
  src.reserve(g.num_undirected_edges());
  dst.reserve(g.num_undirected_edges());
  for (int64_t u = 0; u < g.num_nodes(); ++u) {
    for (int64_t v : g.neighbors(u)) {
      if (u < v) src.push_back(u), dst.push_back(v);
    }
  }
  if (options_.algorithm == CommunityAlgorithm::kLeiden) {
    return third_party::LeidenCommunities(g.num_nodes(), src, dst, options_.resolution,
                                          options_.leiden_beta, options_.leiden_iterations,
                                          Rng::Derive(seed, "leiden"));
  }
  return third_party::LouvainCommunities(g.num_nodes(), src, dst, options_.resolution,
                                         Rng::Derive(seed, "louvain"));
}

absl::StatusOr<Partition> LouvainPartitioner::Run(const Dataset& dataset, int num_clients,
                                                  uint64_t seed) const {
  if (auto s = CheckClientCount(dataset, num_clients, "louvain"); !s.ok()) return s;
  auto community = Communities(dataset, seed);
  if (!community.ok()) return community.status();
  auto packed = PackCommunities(*community, num_clients, options_.delta, options_.rebalance);
  if (!packed.ok()) return packed.status();
  if (options_.class_coverage_fix) ClassCoverageFix(dataset, *packed);
  return packed;
}

std::string LouvainPartitioner::Fingerprint() const {
  // The multilevel fingerprint is the one every cached partition and record was made under;
  // Leiden's options are appended only when Leiden is chosen.
  std::string leiden;
  if (options_.algorithm == CommunityAlgorithm::kLeiden) {
    leiden = absl::StrCat(",algorithm=leiden,beta=", options_.leiden_beta,
                          ",iterations=", options_.leiden_iterations);
  }
  return absl::StrCat("louvain(resolution=", options_.resolution, ",delta=", options_.delta,
                      ",rebalance=", options_.rebalance,
                      ",class_coverage_fix=", options_.class_coverage_fix, leiden, ")");
}

}  // namespace fgl::graph
