#include "graph/random.h"

#include <algorithm>
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

// out = M v, M given by its columns (256 columns of 4 words).
void Multiply(const uint64_t (*m)[4], const uint64_t* v, uint64_t* out) {
  uint64_t r[4] = {0, 0, 0, 0};
  for (int j = 0; j < 256; ++j) {
    const uint64_t bit = (v[j >> 6] >> (j & 63)) & 1;
    const uint64_t keep = -bit;
    for (int w = 0; w < 4; ++w) r[w] ^= m[j][w] & keep;
  }
  for (int w = 0; w < 4; ++w) out[w] = r[w];
}

// c = a b (column form; c may not alias a or b).
void MatMul(const uint64_t (*a)[4], const uint64_t (*b)[4], uint64_t (*c)[4]) {
  for (int j = 0; j < 256; ++j) Multiply(a, b[j], c[j]);
}

}  // namespace

RngJump::RngJump(uint64_t draws) {
  // Binary powering of the one-step matrix T: result = T^draws.
  uint64_t power[256][4], scratch[256][4];
  for (int j = 0; j < 256; ++j) {
    for (int w = 0; w < 4; ++w) power[j][w] = 0;
    power[j][j >> 6] = uint64_t{1} << (j & 63);
    Rng::Advance(power[j]);
    for (int w = 0; w < 4; ++w) columns_[j][w] = 0;
    columns_[j][j >> 6] = uint64_t{1} << (j & 63);  // the identity
  }
  for (uint64_t d = draws; d != 0; d >>= 1) {
    if (d & 1) {
      MatMul(power, columns_, scratch);
      std::copy(&scratch[0][0], &scratch[0][0] + 256 * 4, &columns_[0][0]);
    }
    if (d > 1) {
      MatMul(power, power, scratch);
      std::copy(&scratch[0][0], &scratch[0][0] + 256 * 4, &power[0][0]);
    }
  }
}

void RngJump::Apply(Rng& rng) const { Multiply(columns_, rng.s_, rng.s_); }

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
