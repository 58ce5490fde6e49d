#include "methods/gcfl_plus/clustering.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "glog/logging.h"

namespace fgl::methods::gcfl_plus {

double DtwDistance(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() && b.empty()) return 0;
  if (a.empty() || b.empty()) return std::numeric_limits<double>::infinity();
  const size_t n = a.size(), m = b.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> prev(m + 1, inf), cur(m + 1, inf);
  prev[0] = 0;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = inf;
    for (size_t j = 1; j <= m; ++j) {
      const double d = (a[i - 1] - b[j - 1]) * (a[i - 1] - b[j - 1]);
      cur[j] = d + std::min({prev[j], cur[j - 1], prev[j - 1]});
    }
    std::swap(prev, cur);
  }
  return std::sqrt(prev[m]);
}

std::pair<std::vector<int>, std::vector<int>> MinimumCut(const std::vector<std::vector<double>>& w) {
  const int n = static_cast<int>(w.size());
  CHECK_GE(n, 2);
  std::vector<std::vector<double>> g = w;
  for (int i = 0; i < n; ++i) g[i][i] = 0;
  std::vector<std::vector<int>> members(n);  // original vertices merged into each vertex
  for (int i = 0; i < n; ++i) members[i] = {i};
  std::vector<int> alive(n);
  for (int i = 0; i < n; ++i) alive[i] = i;
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> best_side;
  while (alive.size() > 1) {
    // Maximum adjacency order; the last two vertices give a cut of the phase.
    std::vector<double> key(n, 0);
    std::vector<bool> added(n, false);
    int prev = -1, last = -1;
    for (size_t step = 0; step < alive.size(); ++step) {
      int pick = -1;
      for (int v : alive) {
        if (!added[v] && (pick < 0 || key[v] > key[pick])) pick = v;
      }
      added[pick] = true;
      prev = last;
      last = pick;
      for (int v : alive) {
        if (!added[v]) key[v] += g[pick][v];
      }
    }
    if (key[last] < best) {
      best = key[last];
      best_side = members[last];
    }
    // Merge `last` into `prev`.
    for (int v : alive) {
      g[prev][v] += g[last][v];
      g[v][prev] = g[prev][v];
    }
    g[prev][prev] = 0;
    members[prev].insert(members[prev].end(), members[last].begin(), members[last].end());
    alive.erase(std::find(alive.begin(), alive.end(), last));
  }
  std::vector<bool> in(n, false);
  for (int v : best_side) in[v] = true;
  std::vector<int> a, b;
  for (int v = 0; v < n; ++v) (in[v] ? b : a).push_back(v);
  if (a.empty() || (!b.empty() && b.front() < a.front())) std::swap(a, b);
  return {a, b};
}

}  // namespace fgl::methods::gcfl_plus
