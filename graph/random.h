// Seeded random streams. Everything random in fgl draws from an Rng derived from the run's one
// master seed, so results are identical across machines, standard libraries and thread counts
// (std:: distributions are implementation-defined, so we implement our own).
#ifndef FGL_GRAPH_RANDOM_H_
#define FGL_GRAPH_RANDOM_H_

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace fgl::graph {

class RngJump;

// xoshiro256** seeded through splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  // An independent stream for a named purpose, e.g. Rng(seed, "louvain") or Rng(seed, "client/3").
  Rng(uint64_t seed, std::string_view stream);

  // Inline: dropout masks draw one per two entries, and a call per draw was a third of their cost.
  uint64_t NextU64() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    Advance(s_);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform();
  // Uniform integer in [0, n), unbiased (Lemire). n must be > 0.
  uint64_t UniformInt(uint64_t n);
  // Standard normal (Box-Muller, both values used).
  double Normal();
  // Gamma(shape, 1) (Marsaglia-Tsang; boosted for shape < 1).
  double Gamma(double shape);
  // Dirichlet(alpha, ..., alpha) of dimension k.
  std::vector<double> Dirichlet(double alpha, int k);

  // Fisher-Yates shuffle.
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[UniformInt(i)]);
  }
  // The first k entries (k <= size) become a uniform random k-subset of v, in random order: the
  // first k steps of a Fisher-Yates pass from the front (an epoch's random training nodes).
  template <typename T>
  void ShuffleFront(std::vector<T>& v, size_t k) {
    for (size_t i = 0; i < k; ++i) std::swap(v[i], v[i + UniformInt(v.size() - i)]);
  }

  // Mixes a seed with a stream name (stable across runs and platforms).
  static uint64_t Derive(uint64_t seed, std::string_view stream);

 private:
  friend class RngJump;
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  // xoshiro256's state update, linear over GF(2) (RngJump builds its matrix from it).
  static void Advance(uint64_t* s) {
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = Rotl(s[3], 45);
  }
  uint64_t s_[4];
  bool has_spare_normal_ = false;
  double spare_normal_ = 0;
};

// Advances an Rng by a fixed number of draws, as that many NextU64() calls would, in about a
// microsecond: xoshiro's state update is linear over GF(2), so the advance is a 256 x 256 bit
// matrix (built once, O(log draws) squarings, 8 KB). Lets threads fill consecutive blocks of one
// stream at once and draw exactly what a serial pass draws.
class RngJump {
 public:
  explicit RngJump(uint64_t draws);
  void Apply(Rng& rng) const;

 private:
  // columns_[j] is the advance applied to the state with only bit j set.
  uint64_t columns_[256][4];
};

// Stable 64-bit FNV-1a over bytes, for cache keys and fingerprints.
uint64_t Fnv1a64(const void* data, size_t size, uint64_t h = 0xcbf29ce484222325ULL);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_RANDOM_H_
