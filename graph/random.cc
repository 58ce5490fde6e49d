#include "graph/random.h"

#include <cmath>

#include "glog/logging.h"

namespace fgl::graph {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t Fnv1a64(const void* data, size_t size, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t Rng::Derive(uint64_t seed, std::string_view stream) {
  uint64_t x = seed ^ Fnv1a64(stream.data(), stream.size());
  return SplitMix64(x);
}

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& s : s_) s = SplitMix64(x);
}

Rng::Rng(uint64_t seed, std::string_view stream) : Rng(Derive(seed, stream)) {}

double Rng::Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

uint64_t Rng::UniformInt(uint64_t n) {
  CHECK_GT(n, 0u);
  // Lemire's nearly-divisionless method.
  unsigned __int128 m = static_cast<unsigned __int128>(NextU64()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = -n % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(NextU64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::Normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u1;
  do u1 = Uniform();
  while (u1 <= 0.0);
  const double u2 = Uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_normal_ = r * std::sin(2.0 * M_PI * u2);
  has_spare_normal_ = true;
  return r * std::cos(2.0 * M_PI * u2);
}

double Rng::Gamma(double shape) {
  CHECK_GT(shape, 0.0);
  if (shape < 1.0) {
    // Gamma(a) = Gamma(a + 1) * U^(1/a).
    double u;
    do u = Uniform();
    while (u <= 0.0);
    return Gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = Normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = Uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

std::vector<double> Rng::Dirichlet(double alpha, int k) {
  std::vector<double> p(k);
  double sum = 0;
  for (double& x : p) sum += (x = Gamma(alpha));
  if (sum <= 0) {
    // Underflow at tiny alpha: put all mass on one uniformly chosen coordinate.
    std::fill(p.begin(), p.end(), 0.0);
    p[UniformInt(k)] = 1.0;
    return p;
  }
  for (double& x : p) x /= sum;
  return p;
}

}  // namespace fgl::graph
