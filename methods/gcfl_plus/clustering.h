// GCFL+'s clustering tools (Xie et al., NeurIPS 2021): dynamic-time-warping distance between
// clients' gradient-norm sequences and the global minimum cut that bipartitions a cluster.
#ifndef FGL_METHODS_GCFL_PLUS_CLUSTERING_H_
#define FGL_METHODS_GCFL_PLUS_CLUSTERING_H_

#include <utility>
#include <vector>

namespace fgl::methods::gcfl_plus {

// Unconstrained DTW (dtaidistance's dtw.distance): sqrt of the least sum of squared differences
// over warping paths with steps (i-1, j), (i, j-1), (i-1, j-1). 0 for two empty sequences.
double DtwDistance(const std::vector<double>& a, const std::vector<double>& b);

// Stoer-Wagner global minimum cut of the complete graph with symmetric non-negative weights
// w[i][j] (diagonal ignored), n >= 2. Returns the two sides as ascending index lists; ties
// broken towards the lowest indices, so the result is deterministic.
std::pair<std::vector<int>, std::vector<int>> MinimumCut(const std::vector<std::vector<double>>& w);

}  // namespace fgl::methods::gcfl_plus

#endif  // FGL_METHODS_GCFL_PLUS_CLUSTERING_H_
