#include "nn/adam.h"

#include <immintrin.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"
#include "c10/util/string_utils.h"
#include "nn/spill_file.h"

namespace fgl::nn {
namespace {

thread_local std::array<torch::Tensor, 2> scratch;

// A tensor shaped like `like` in scratch buffer `i`, grown when too small. Parameters are
// contiguous; anything else gets a fresh tensor, as LibTorch's step would allocate.
torch::Tensor Scratch(int i, const torch::Tensor& like) {
  if (!like.is_contiguous()) return torch::empty_like(like);
  torch::Tensor& buffer = scratch[i];
  if (!buffer.defined() || buffer.numel() < like.numel() || buffer.dtype() != like.dtype() ||
      buffer.device() != like.device()) {
    buffer = torch::Tensor();  // free the old one first: peak memory as LibTorch's
    buffer = torch::empty({like.numel()}, like.options());
  }
  return buffer.narrow(0, 0, like.numel()).view(like.sizes());
}

// The step's scalars as LibTorch's kernels see them: each op casts its double to float.
struct StepScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bias_correction2, eps, step_size, weight_decay;
  bool decay;
};

// One element of the step, the arithmetic of LibTorch 1.13's AVX2 kernels in the op-by-op step:
// every op rounds to float, `add_(grad, alpha)` and `addcmul_` are fused multiply-adds (their
// vector and scalar paths alike: the Debian build contracts the scalar lambdas too), the divisions
// are true divisions. The vector loop below does the same eight lanes at a time.
inline void StepElement(float* p, const float* g, float* m, float* v, int64_t i, const StepScalars& k) {
  float grad = g[i];
  if (k.decay) grad = std::fma(k.weight_decay, p[i], grad);
  const float mean = std::fma(k.one_minus_beta1, grad, m[i] * k.beta1);
  const float sq = std::fma(k.one_minus_beta2 * grad, grad, v[i] * k.beta2);
  const float denom = std::sqrt(sq) / k.sqrt_bias_correction2 + k.eps;
  p[i] = p[i] + k.step_size * mean / denom;
  m[i] = mean;
  v[i] = sq;
}

// Subnormal moments. A weight whose gradient stays exactly zero (a feature absent from a client's
// batches) has its first moment decay by beta1 a step into float's subnormal range, about 700
// steps after its last gradient, and its second moment follows much later. Every vector op with a
// subnormal operand or result takes a microcode assist: on an Intel Xeon (model 207) a step with
// one such lane in eight was 27x slower (35 vs 1.3 ms over 1.8 M floats), and Adam grew from 14%
// to 39% of a FedEgo batch-8 run. Flushing subnormals to zero would change the moments' bits, so
// such elements get the same step in closed form instead, with no subnormal float arithmetic.

constexpr uint32_t kMagnitude = 0x7fffffffu, kSign = 0x80000000u, kExponent = 0x7f800000u;
constexpr uint32_t Pow2Bits(int e) { return static_cast<uint32_t>(127 + e) << 23; }  // 2^e, e in [-126, 127]

inline uint32_t Bits(float x) { uint32_t b; std::memcpy(&b, &x, 4); return b; }
inline float FromBits(uint32_t b) { float x; std::memcpy(&x, &b, 4); return x; }

// fl(x * y) for a finite float x and a normal y > 0, bit for bit as the hardware rounds it (to
// nearest, ties to even, subnormal results included), from the exact product in double (at most
// 48 significant bits) and, for a subnormal result, an integer rounding on the 2^-149 grid.
inline uint32_t MultiplyBits(uint32_t x, float y) {
  double xd;
  if ((x & kExponent) == 0) {  // zero or subnormal: mantissa * 2^-149, built without touching it as a float
    xd = static_cast<double>(x & 0x007fffffu) * 0x1p-149;
    if (x & kSign) xd = -xd;
  } else {
    xd = static_cast<double>(FromBits(x));
  }
  const double product = xd * static_cast<double>(y);  // exact
  const double magnitude = std::fabs(product);
  if (magnitude >= 0x1p-126) return Bits(static_cast<float>(product));  // a normal result: one rounding
  // (k + 2^52) - 2^52 rounds 0 <= k < 2^52 to an integer, ties to even; 2^23 encodes 2^-126 itself.
  const double units = (magnitude * 0x1p149 + 0x1p52) - 0x1p52;
  return (std::signbit(product) ? kSign : 0u) | static_cast<uint32_t>(units);
}

// Whether the closed form may be used at all: no weight decay (a decayed gradient is not zero),
// |step size| <= 1, eps >= 2^-27, 0 <= beta <= 1 with 1 - beta >= 0, a positive bias correction.
bool ClosedFormApplies(const StepScalars& k) {
  auto in = [](float x, float lo, float hi) { return x >= lo && x <= hi; };  // false for NaN
  return !k.decay && in(k.step_size, -1.0f, 1.0f) && in(k.eps, 0x1p-27f, 0x1p100f) && in(k.beta1, 0x1p-126f, 1.0f) &&
         in(k.beta2, 0x1p-126f, 1.0f) && in(k.one_minus_beta1, 0.0f, 1.0f) && !std::signbit(k.one_minus_beta1) &&
         in(k.one_minus_beta2, 0.0f, 1.0f) && !std::signbit(k.one_minus_beta2) &&
         in(k.sqrt_bias_correction2, 0x1p-60f, 1.0f);
}

// The step of an element whose gradient is +-0, in closed form where that is exact; false (nothing
// written) elsewhere. With g = +-0: mean = fl(m * beta1) (an exact zero takes the sum of signed
// zeros' sign), sq = fl(v * beta2) (+0 for a zero: (a2 * g) * g is +0). If |mean| <= 2^-100 the
// parameter keeps its bits: |fl(step * mean)| <= 2^-100, denom >= eps >= 2^-27 (sq >= 0), so the
// increment is at most 2^-73, below half the gap (>= 2^-70) around any |p| >= 2^-45.
inline bool ZeroGradientStep(float* p, const float* g, float* m, float* v, int64_t i, const StepScalars& k) {
  const uint32_t gb = Bits(g[i]), pb = Bits(p[i]), mb = Bits(m[i]), vb = Bits(v[i]);
  if ((gb & kMagnitude) != 0) return false;
  if ((pb & kMagnitude) < Pow2Bits(-45) || (pb & kMagnitude) >= kExponent) return false;  // tiny, inf or NaN
  if ((mb & kMagnitude) >= kExponent) return false;
  if ((vb & kMagnitude) >= kExponent || ((vb & kSign) && (vb & kMagnitude))) return false;  // inf, NaN, < 0
  uint32_t mean = MultiplyBits(mb, k.beta1);
  if ((mean & kMagnitude) > Pow2Bits(-100)) return false;
  if ((mean & kMagnitude) == 0) mean = (gb & mean & kSign);  // (+-0) + (+-0): -0 only for -0 + -0
  uint32_t sq = MultiplyBits(vb, k.beta2);
  if ((sq & kMagnitude) == 0) sq = 0;
  m[i] = FromBits(mean);
  v[i] = FromBits(sq);
  return true;
}

// MultiplyBits for eight |x| <= 2^-100 at once (magnitudes in, magnitudes out), in AVX2 double
// lanes: no float op sees a subnormal. Normal and subnormal inputs are widened separately (the
// other lanes zeroed), as are normal and subnormal results.
__attribute__((target("avx2,fma"))) inline __m256i DecayTiny(__m256i magnitude, float beta) {
  const __m256i subnormal = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x00800000), magnitude);
  const __m256 normal_part = _mm256_castsi256_ps(_mm256_andnot_si256(subnormal, magnitude));
  const __m256i mantissa = _mm256_and_si256(subnormal, magnitude);
  const __m256d b = _mm256_set1_pd(static_cast<double>(beta)), unit = _mm256_set1_pd(0x1p-149);
  const __m256d min_normal = _mm256_set1_pd(0x1p-126), scale = _mm256_set1_pd(0x1p149), shift = _mm256_set1_pd(0x1p52);
  __m128i out[2];
  for (int h = 0; h < 2; ++h) {
    const __m128 normal_half = h ? _mm256_extractf128_ps(normal_part, 1) : _mm256_castps256_ps128(normal_part);
    const __m128i mantissa_half = h ? _mm256_extracti128_si256(mantissa, 1) : _mm256_castsi256_si128(mantissa);
    const __m128i subnormal_half = h ? _mm256_extracti128_si256(subnormal, 1) : _mm256_castsi256_si128(subnormal);
    const __m256d widened = _mm256_blendv_pd(_mm256_cvtps_pd(normal_half),
                                             _mm256_mul_pd(_mm256_cvtepi32_pd(mantissa_half), unit),
                                             _mm256_castsi256_pd(_mm256_cvtepi32_epi64(subnormal_half)));
    const __m256d product = _mm256_mul_pd(widened, b);  // exact
    const __m256d tiny = _mm256_cmp_pd(product, min_normal, _CMP_LT_OQ);
    const __m128i rounded = _mm_castps_si128(_mm256_cvtpd_ps(_mm256_andnot_pd(tiny, product)));
    const __m128i units = _mm256_cvtpd_epi32(_mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(product, scale), shift), shift));
    // tiny as a 4 x 32-bit mask: the low half of each 64-bit lane
    const __m128i tiny32 = _mm_castps_si128(_mm256_castps256_ps128(
        _mm256_permutevar8x32_ps(_mm256_castpd_ps(tiny), _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6))));
    out[h] = _mm_blendv_epi8(rounded, units, tiny32);
  }
  return _mm256_set_m128i(out[1], out[0]);
}

// One pass over a contiguous float parameter: each element gets StepElement's arithmetic, so the
// result is LibTorch's bit for bit (nn/adam_test.cc), with one read and write of each tensor
// instead of about twenty passes and two temporaries: FedEgo's 1.8M parameters step 3-4x faster
// (15 -> 4.5 ms). A lane with a moment at or below 2^-100 is stepped alone, by ZeroGradientStep
// where it applies.
__attribute__((target("avx2,fma"))) void FusedStep(float* p, const float* g, float* m, float* v, int64_t n,
                                                   const StepScalars& k) {
  const __m256 beta1 = _mm256_set1_ps(k.beta1), a1 = _mm256_set1_ps(k.one_minus_beta1);
  const __m256 beta2 = _mm256_set1_ps(k.beta2), a2 = _mm256_set1_ps(k.one_minus_beta2);
  const __m256 c2 = _mm256_set1_ps(k.sqrt_bias_correction2), eps = _mm256_set1_ps(k.eps);
  const __m256 step = _mm256_set1_ps(k.step_size), wd = _mm256_set1_ps(k.weight_decay);
  const __m256i magnitude = _mm256_set1_epi32(static_cast<int>(kMagnitude));
  const __m256i tiny = _mm256_set1_epi32(static_cast<int>(Pow2Bits(-100) + 1));  // magnitude bits <= 2^-100
  const __m256i zero = _mm256_setzero_si256();
  const bool closed_form = ClosedFormApplies(k);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // Integer tests on the moments' bits (no float op sees a subnormal here): a lane is suspect
    // when 0 < |m| or |v| <= 2^-100.
    __m256 m_in = _mm256_loadu_ps(m + i), v_in = _mm256_loadu_ps(v + i), grad = _mm256_loadu_ps(g + i);
    const __m256 param_in = _mm256_loadu_ps(p + i);
    const __m256i mm = _mm256_and_si256(_mm256_castps_si256(m_in), magnitude);
    const __m256i vm = _mm256_and_si256(_mm256_castps_si256(v_in), magnitude);
    const __m256i m_tiny = _mm256_andnot_si256(_mm256_cmpeq_epi32(mm, zero), _mm256_cmpgt_epi32(tiny, mm));
    const __m256i v_tiny = _mm256_andnot_si256(_mm256_cmpeq_epi32(vm, zero), _mm256_cmpgt_epi32(tiny, vm));
    const __m256i suspect = _mm256_or_si256(m_tiny, v_tiny);
    int suspects = _mm256_movemask_ps(_mm256_castsi256_ps(suspect));
    alignas(32) float p0[8], g0[8], m0[8], v0[8];  // a suspect lane's inputs, stepped alone below
    __m256i decayed = zero, fast = zero;
    if (suspects != 0) {
      if (closed_form) {
        // ZeroGradientStep for the usual suspect, eight lanes at once: g = +-0, 0 < |m| <= 2^-100,
        // v = +-0 or a finite v > 2^-100, 2^-45 <= |p| < inf. The vector step below gives v's
        // update there (no subnormal), the parameter keeps its bits, m decays in closed form.
        const __m256i v_bits = _mm256_castps_si256(v_in);
        const __m256i pm = _mm256_and_si256(_mm256_castps_si256(param_in), magnitude);
        const __m256i finite = _mm256_set1_epi32(static_cast<int>(kExponent));
        const __m256i g_zero = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(grad), magnitude), zero);
        const __m256i p_ok = _mm256_and_si256(_mm256_cmpgt_epi32(pm, _mm256_set1_epi32(static_cast<int>(Pow2Bits(-45)) - 1)),
                                              _mm256_cmpgt_epi32(finite, pm));
        const __m256i v_ok = _mm256_or_si256(
            _mm256_cmpeq_epi32(vm, zero),
            _mm256_and_si256(_mm256_andnot_si256(v_tiny, _mm256_cmpgt_epi32(finite, vm)),
                             _mm256_cmpgt_epi32(v_bits, _mm256_set1_epi32(-1))));
        fast = _mm256_and_si256(_mm256_and_si256(m_tiny, g_zero), _mm256_and_si256(p_ok, v_ok));
        if (!_mm256_testz_si256(fast, fast)) {
          // mean = fl(m * beta1) with m's sign; an exact zero is -0 only for -0 + -0 (g and m both negative).
          const __m256i sign = _mm256_set1_epi32(static_cast<int>(kSign));
          const __m256i m_bits = _mm256_castps_si256(m_in);
          const __m256i product = DecayTiny(_mm256_and_si256(mm, fast), k.beta1);
          const __m256i zero_product = _mm256_cmpeq_epi32(product, zero);
          const __m256i product_sign = _mm256_and_si256(m_bits, sign);
          const __m256i sum_sign = _mm256_and_si256(product_sign, _mm256_castps_si256(grad));
          decayed = _mm256_or_si256(product, _mm256_blendv_epi8(product_sign, sum_sign, zero_product));
          suspects &= ~_mm256_movemask_ps(_mm256_castsi256_ps(fast));
        }
      }
      if (suspects != 0) {  // lanes left for StepElement
        _mm256_store_ps(p0, param_in);
        _mm256_store_ps(g0, grad);
        _mm256_store_ps(m0, m_in);
        _mm256_store_ps(v0, v_in);
      }
      // The vector step sees zeros for the other suspect lanes' moments and gradient, and zero
      // first moments in the fast lanes (no subnormal anywhere); its results there are replaced.
      const __m256 slow = _mm256_castsi256_ps(_mm256_andnot_si256(fast, suspect));
      m_in = _mm256_andnot_ps(_mm256_castsi256_ps(suspect), m_in);
      v_in = _mm256_andnot_ps(slow, v_in);
      grad = _mm256_andnot_ps(slow, grad);
    }
    __m256 param = param_in;
    if (k.decay) grad = _mm256_fmadd_ps(param, wd, grad);                                   // grad.add(p, wd)
    const __m256 mean = _mm256_fmadd_ps(grad, a1, _mm256_mul_ps(m_in, beta1));               // m.mul_().add_()
    const __m256 sq = _mm256_fmadd_ps(_mm256_mul_ps(a2, grad), grad, _mm256_mul_ps(v_in, beta2));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(sq), c2), eps);
    param = _mm256_add_ps(param, _mm256_div_ps(_mm256_mul_ps(step, mean), denom));      // p.addcdiv_()
    const __m256 fast_lanes = _mm256_castsi256_ps(fast);
    _mm256_storeu_ps(m + i, _mm256_blendv_ps(mean, _mm256_castsi256_ps(decayed), fast_lanes));
    _mm256_storeu_ps(v + i, sq);
    _mm256_storeu_ps(p + i, _mm256_blendv_ps(param, param_in, fast_lanes));
    for (int left = suspects; left != 0; left &= left - 1) {
      const int j = __builtin_ctz(left);
      if (!(closed_form && ZeroGradientStep(p0, g0, m0, v0, j, k))) StepElement(p0, g0, m0, v0, j, k);
      p[i + j] = p0[j];
      m[i + j] = m0[j];
      v[i + j] = v0[j];
    }
  }
  for (; i < n; ++i) {
    if (!(closed_form && ZeroGradientStep(p, g, m, v, i, k))) StepElement(p, g, m, v, i, k);
  }
}

// Whether LibTorch runs its AVX2 kernels, the ones FusedStep reproduces: the run binaries pin
// ATEN_CPU_CAPABILITY=avx2 (nn/cpu_kernels.h). Anything else takes the op-by-op step.
bool FusedStepMatchesLibTorch() {
  static const bool matches = [] {
    const char* capability = std::getenv("ATEN_CPU_CAPABILITY");
    return capability != nullptr && std::strcmp(capability, "avx2") == 0 && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
  }();
  return matches;
}

// A parameter, its gradient and both moments that FusedStep can step: contiguous float on the CPU
// (the moments are made like the parameter; the gradient is dense, step() checks).
bool Fusable(std::initializer_list<const torch::Tensor*> tensors) {
  for (const torch::Tensor* t : tensors) {
    if (!t->device().is_cpu() || t->scalar_type() != torch::kFloat32 || !t->is_contiguous()) return false;
  }
  return FusedStepMatchesLibTorch();
}

}  // namespace

bool Adam::FusedStepApplies() { return FusedStepMatchesLibTorch(); }

Adam::~Adam() = default;

absl::Status Adam::Spill(const std::string& dir, int64_t min_bytes) {
  TORCH_CHECK(!spilled(), "fgl::nn::Adam::Spill: already spilled");
  std::vector<Spilled> chosen;
  std::vector<torch::Tensor> moments;
  for (auto& [key, base] : state_) {
    auto& state = static_cast<torch::optim::AdamParamState&>(*base);
    for (const bool squared : {false, true}) {
      const torch::Tensor& moment = squared ? state.exp_avg_sq() : state.exp_avg();
      const int64_t bytes = moment.numel() * static_cast<int64_t>(moment.element_size());
      if (bytes >= min_bytes && moment.device().is_cpu()) {
        chosen.push_back({key, squared, moment.options()});
        moments.push_back(moment);
      }
    }
  }
  if (chosen.empty()) return absl::OkStatus();  // nothing worth a file
  absl::StatusOr<SpillFile> file = SpillFile::Write(dir, moments);
  if (!file.ok()) return absl::Status(file.status().code(), absl::StrCat("optimiser state: ", file.status().message()));
  moments.clear();
  // Only now that every write succeeded are the moments freed.
  for (const Spilled& s : chosen) {
    auto& state = static_cast<torch::optim::AdamParamState&>(*state_.at(s.key));
    torch::Tensor empty = torch::empty({0}, s.options);
    s.squared ? state.exp_avg_sq(empty) : state.exp_avg(empty);
  }
  spill_file_ = std::make_unique<SpillFile>(*std::move(file));
  spilled_ = std::move(chosen);
  return absl::OkStatus();
}

absl::Status Adam::Unspill() {
  if (!spilled()) return absl::OkStatus();
  absl::StatusOr<std::vector<torch::Tensor>> moments = spill_file_->Read();
  if (!moments.ok()) return absl::Status(moments.status().code(), absl::StrCat("optimiser state: ", moments.status().message()));
  for (size_t i = 0; i < spilled_.size(); ++i) {
    auto& state = static_cast<torch::optim::AdamParamState&>(*state_.at(spilled_[i].key));
    spilled_[i].squared ? state.exp_avg_sq((*moments)[i]) : state.exp_avg((*moments)[i]);
  }
  spill_file_.reset();
  spilled_.clear();
  return absl::OkStatus();
}

// The operations and their order are LibTorch 1.13's Adam::step (amsgrad off), in one fused pass
// where its AVX2 kernels run, else op by op with the temporaries in scratch buffers.
// nn/adam_test.cc compares both with LibTorch's bit for bit.
torch::Tensor Adam::step(LossClosure closure) {
  TORCH_CHECK(!spilled(), "fgl::nn::Adam::step with its moments spilled: Unspill first");
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    auto& options = static_cast<torch::optim::AdamOptions&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "fgl::nn::Adam does not implement amsgrad");
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "Adam does not support sparse gradients");
      const std::string key = c10::guts::to_string(p.unsafeGetTensorImpl());
      if (state_.find(key) == state_.end()) {
        auto state = std::make_unique<torch::optim::AdamParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state_[key] = std::move(state);
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*state_[key]);
      torch::Tensor& exp_avg = state.exp_avg();
      torch::Tensor& exp_avg_sq = state.exp_avg_sq();
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas());
      const double beta2 = std::get<1>(options.betas());
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      if (Fusable({&p, &grad, &exp_avg, &exp_avg_sq})) {
        const StepScalars k{static_cast<float>(beta1),
                            static_cast<float>(1 - beta1),
                            static_cast<float>(beta2),
                            static_cast<float>(1 - beta2),
                            static_cast<float>(std::sqrt(bias_correction2)),
                            static_cast<float>(options.eps()),
                            static_cast<float>(-options.lr() / bias_correction1),
                            static_cast<float>(options.weight_decay()),
                            options.weight_decay() != 0};
        FusedStep(p.data_ptr<float>(), grad.data_ptr<float>(), exp_avg.data_ptr<float>(), exp_avg_sq.data_ptr<float>(),
                  p.numel(), k);
        continue;
      }
      if (options.weight_decay() != 0) {
        torch::Tensor decayed = Scratch(0, grad);
        at::add_out(decayed, grad, p, options.weight_decay());
        grad = decayed;
      }
      exp_avg.mul_(beta1).add_(grad, 1 - beta1);
      exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      torch::Tensor denom = Scratch(1, exp_avg_sq);
      at::sqrt_out(denom, exp_avg_sq);
      denom.div_(std::sqrt(bias_correction2)).add_(options.eps());
      p.addcdiv_(exp_avg, denom, -options.lr() / bias_correction1);
    }
  }
  return loss;
}

void Adam::ReleaseScratch() { scratch = {}; }

}  // namespace fgl::nn
