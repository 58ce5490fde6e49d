#include "graph/csbm.h"

#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/random.h"

namespace fgl::graph {

absl::StatusOr<Dataset> MakeCsbm(const CsbmOptions& o, uint64_t seed) {
  if (o.num_nodes < 2 || o.num_classes < 2 || o.num_classes > o.num_nodes ||
      o.num_features < 1 || o.average_degree < 0 || o.homophily < 0 || o.homophily > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "csbm: need num_nodes >= 2, 2 <= num_classes <= num_nodes, num_features >= 1, "
        "average_degree >= 0, homophily in [0, 1]; got nodes=", o.num_nodes, " classes=",
        o.num_classes, " features=", o.num_features, " degree=", o.average_degree,
        " homophily=", o.homophily));
  }
  const int64_t n = o.num_nodes, c = o.num_classes, f = o.num_features;
  Rng rng(seed, "csbm");
  std::vector<int64_t> y(n);
  for (int64_t v = 0; v < n; ++v) y[v] = v % c;
  rng.Shuffle(y);
  std::vector<std::vector<int64_t>> members(c);
  for (int64_t v = 0; v < n; ++v) members[y[v]].push_back(v);

  Dataset d;
  d.name = "csbm";
  d.num_classes = c;
  d.labels = torch::from_blob(y.data(), {n}, torch::kInt64).clone();
  std::vector<float> mu(c * f);
  const double scale = o.feature_signal / std::sqrt(static_cast<double>(f));
  for (float& m : mu) m = static_cast<float>(scale * rng.Normal());
  d.features = torch::empty({n, f}, torch::kFloat32);
  float* x = d.features.data_ptr<float>();
  for (int64_t v = 0; v < n; ++v)
    for (int64_t j = 0; j < f; ++j) x[v * f + j] = mu[y[v] * f + j] + static_cast<float>(rng.Normal());

  const int64_t m = static_cast<int64_t>(std::llround(n * o.average_degree / 2));
  std::vector<int64_t> src, dst;
  src.reserve(m);
  dst.reserve(m);
  for (int64_t e = 0; e < m; ++e) {
    const int64_t u = static_cast<int64_t>(rng.UniformInt(n));
    int64_t v;
    if (rng.Uniform() < o.homophily) {
      const auto& same = members[y[u]];
      v = same[rng.UniformInt(same.size())];
    } else {
      // Uniform over the other classes' nodes: redraw until the class differs.
      do v = static_cast<int64_t>(rng.UniformInt(n));
      while (y[v] == y[u]);
    }
    src.push_back(u);
    dst.push_back(v);
  }
  auto g = CsrFromEdges(n, src, dst, {}, "csbm");
  if (!g.ok()) return g.status();
  d.graph = *std::move(g);
  return d;
}

}  // namespace fgl::graph
