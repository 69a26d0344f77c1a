// sampling/sampling_math.h — the arithmetic of token sampling, written once for host and device so
// that the CPU reference (cpu_sampler.cpp) and the CUDA kernel (backend/cuda/sampling.cu) compute
// the same bits: every float operation is rounded once, in the same order, with exp and log
// evaluated by the polynomials below instead of libm / CUDA's expf, which differ in the last bit.
//
// Why this is enough for bit-identical results: past the per-token float values (scaled logit,
// relative weight), everything is exact: weights become 40-bit fixed-point integers, and masses are
// integer sums, so the order of any reduction (threads, CTAs, a cluster, a CPU loop) cannot change
// them. Device code uses the __f*_rn intrinsics so that nvcc never contracts a*b+c into an fma; host
// code relies on ISO C++ mode (CMake's -std=c++20), where g++ does not contract either, and on SSE
// arithmetic (x86-64), which rounds each operation to float.
#pragma once

#include <cstdint>

#include "sampling/philox.h"

#if !defined(__CUDA_ARCH__)
#include <bit>
#include <cmath>
#endif

namespace fg::sampling {

// --- single-rounding float operations --------------------------------------------------------

FG_SAMPLING_HD float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FG_SAMPLING_HD float fsub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
FG_SAMPLING_HD float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FG_SAMPLING_HD float fdiv(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
FG_SAMPLING_HD float ffloor(float a) {
#if defined(__CUDA_ARCH__)
  return floorf(a);
#else
  return std::floor(a);
#endif
}
FG_SAMPLING_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  return std::bit_cast<uint32_t>(x);
#endif
}
FG_SAMPLING_HD float bits_float(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  return std::bit_cast<float>(b);
#endif
}
// Round to nearest even (the default rounding mode on the host).
FG_SAMPLING_HD float u64_to_float(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __ull2float_rn(x);
#else
  return static_cast<float>(x);
#endif
}

inline constexpr uint32_t kPlusInfBits = 0x7f800000u, kMinusInfBits = 0xff800000u;

// --- exp and log -------------------------------------------------------------------------------

// e^x within 2 ulp (measured relative error 1e-7) for x in [-80, 88]; 0 below -80 (weights that
// small are far under the fixed-point resolution, and staying clear of subnormals keeps FTZ
// settings out of the result), +inf above 88, NaN for NaN. exp_det(0) == 1 exactly, so the
// largest token's weight is 1.
FG_SAMPLING_HD float exp_det(float x) {
  if (!(x >= -80.0f)) return x != x ? x : 0.0f;
  if (x > 88.0f) return bits_float(kPlusInfBits);
  // x = k ln2 + r, |r| <= ln2/2; ln2 split Cody-Waite style so that k * kLn2Hi is exact.
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const float k = ffloor(fadd(fmul(x, kLog2e), 0.5f));
  const float r = fsub(fsub(x, fmul(k, kLn2Hi)), fmul(k, kLn2Lo));
  // Taylor series to r^7 / 7!: the truncation error 0.35^8 / 8! is below 2^-27.
  float p = 1.0f / 5040.0f;
  p = fadd(fmul(p, r), 1.0f / 720.0f);
  p = fadd(fmul(p, r), 1.0f / 120.0f);
  p = fadd(fmul(p, r), 1.0f / 24.0f);
  p = fadd(fmul(p, r), 1.0f / 6.0f);
  p = fadd(fmul(p, r), 0.5f);
  p = fadd(fmul(p, r), 1.0f);
  p = fadd(fmul(p, r), 1.0f);
  const uint32_t biased = static_cast<uint32_t>(static_cast<int>(k) + 127);  // k in [-115, 127]
  return fmul(p, bits_float(biased << 23));
}

// Natural log within 3 ulp (measured relative error 1.7e-7) for positive x; -inf for 0, NaN for
// negative or NaN, +inf for +inf. Used for the reported logprob, never for a sampling decision.
FG_SAMPLING_HD float log_det(float x) {
  if (!(x > 0.0f)) return x == 0.0f ? bits_float(kMinusInfBits) : bits_float(0x7fc00000u);  // quiet NaN
  if (x == bits_float(kPlusInfBits)) return x;
  float e_adjust = 0.0f;
  if (x < 1.17549435e-38f) {  // subnormal: scale into the normal range first
    x = fmul(x, 8388608.0f);  // 2^23
    e_adjust = -23.0f;
  }
  const uint32_t bits = float_bits(x);
  float e = static_cast<float>(static_cast<int>((bits >> 23) & 0xffu) - 127);
  float m = bits_float((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421356f) {
    m = fmul(m, 0.5f);
    e = fadd(e, 1.0f);
  }
  e = fadd(e, e_adjust);
  // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172: series to s^9.
  const float f = fsub(m, 1.0f);
  const float s = fdiv(f, fadd(2.0f, f));
  const float z = fmul(s, s);
  float t = 1.0f / 9.0f;
  t = fadd(fmul(t, z), 1.0f / 7.0f);
  t = fadd(fmul(t, z), 1.0f / 5.0f);
  t = fadd(fmul(t, z), 1.0f / 3.0f);
  t = fmul(t, z);
  const float s2 = fmul(s, 2.0f);
  const float log_m = fadd(s2, fmul(s2, t));
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  return fadd(fmul(e, kLn2Hi), fadd(fmul(e, kLn2Lo), log_m));
}

// --- the per-token values of the sampling semantics ----------------------------------------------

// The temperature-scaled logit. Adding +0 turns -0 into +0 so that float comparison and the bit
// order of float_key below agree on every value a kernel can see.
FG_SAMPLING_HD float scaled_logit(float logit, float temperature) { return fadd(fdiv(logit, temperature), 0.0f); }

// p_i / p_max = e^(s_i - s_max), in [0, 1].
FG_SAMPLING_HD float relative_weight(float scaled, float scaled_max) { return exp_det(fsub(scaled, scaled_max)); }

// The fixed-point resolution of weights: a token's mass is floor(weight * 2^40).
inline constexpr int kWeightBits = 40;
inline constexpr uint64_t kUnitWeight = uint64_t{1} << kWeightBits;

// floor(w * 2^40) for w in [0, 1]; 0 for NaN or w <= 0; at most 2^40. A vocabulary of fewer than
// 2^23 tokens therefore sums to less than 2^63.
FG_SAMPLING_HD uint64_t fixed_weight(float w) {
  if (!(w > 0.0f)) return 0;
  if (w >= 1.0f) return kUnitWeight;
  return static_cast<uint64_t>(fmul(w, 1099511627776.0f));  // 2^40; exact scaling, truncation
}

// A uint32 whose unsigned order is the order of the (non-NaN) floats: flip all bits of negatives,
// the sign bit of positives. -0 and +0 differ, which scaled_logit rules out.
FG_SAMPLING_HD uint32_t float_key(float f) {
  const uint32_t b = float_bits(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
FG_SAMPLING_HD float key_float(uint32_t key) { return bits_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key); }

// The top-p mass threshold: ceil(top_p * total) in double (one correctly rounded product), in
// [1, total]. total >= 1.
FG_SAMPLING_HD uint64_t top_p_target(float top_p, uint64_t total) {
#if defined(__CUDA_ARCH__)
  const double product = __dmul_rn(static_cast<double>(top_p), __ull2double_rn(total));
  const double t = ceil(product);
#else
  const double product = static_cast<double>(top_p) * static_cast<double>(total);
  const double t = std::ceil(product);
#endif
  if (!(t >= 1.0)) return 1;
  const uint64_t target = t >= 18446744073709551615.0 ? total : static_cast<uint64_t>(t);
  return target < total ? target : total;
}

// floor(bits * total / 2^64): a uniform draw in [0, total). Every integer of the range is hit by
// floor(2^64 / total) or one more values of `bits`, so a token of mass q is drawn with probability
// q / total up to 2^-64.
FG_SAMPLING_HD uint64_t draw_below(uint64_t bits, uint64_t total) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(bits, total);
#else
  __extension__ typedef unsigned __int128 u128;
  return static_cast<uint64_t>((static_cast<u128>(bits) * total) >> 64);
#endif
}

// log-softmax of the raw logit `logit` given the row maximum and Z = sum of fixed_weight(
// exp_det(l_j - logit_max)) over the row (Z >= 2^40 when the maximum is finite).
FG_SAMPLING_HD float token_logprob(float logit, float logit_max, uint64_t z) {
  const float log_z = log_det(fmul(u64_to_float(z), 9.094947017729282e-13f));  // 2^-40
  return fsub(fsub(logit, logit_max), log_z);
}

// --- penalties and the order of top logprobs (items 0 and 4 of sampling_params.h) ----------------

// A listed token's penalized logit: the repetition penalty (divide positive logits, multiply the
// others), then, when the token occurs in the output, the frequency and the presence penalties, one
// rounding each, in vLLM's order.
FG_SAMPLING_HD float penalized_logit(float logit, float repetition, float frequency, float presence,
                                     int32_t output_count) {
  float l = logit > 0.0f ? fdiv(logit, repetition) : fmul(logit, repetition);
  if (output_count > 0) {
    l = fsub(l, fmul(frequency, static_cast<float>(output_count)));
    l = fsub(l, presence);
  }
  return l;
}

// A logit-bias entry's (token, bias bits) applied: the biased logit, one rounding (item 0).
FG_SAMPLING_HD float biased_logit(float logit, int32_t bias_bits) {
  return fadd(logit, bits_float(static_cast<uint32_t>(bias_bits)));
}

// The order of top logprobs as one integer, larger = earlier: the logit's float_key in the high
// word (-0 counted as +0 so that the two tie; NaN as 0, below float_key(-inf) = 0x007fffff), the
// complement of the id in the low word (ties go to the lower id). Distinct ids give distinct
// ranks, and no id below 2^32 - 1 gives 0, which is free to mean "no token".
FG_SAMPLING_HD uint64_t logprob_rank(float logit, uint32_t id) {
  const uint32_t key = logit != logit ? 0u : float_key(fadd(logit, 0.0f));
  return (static_cast<uint64_t>(key) << 32) | static_cast<uint64_t>(0xffffffffu - id);
}
FG_SAMPLING_HD int32_t logprob_rank_id(uint64_t rank) {
  return static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(rank & 0xffffffffu));
}

// L_max of item 4 from the best-ranked token's logit: the lowest-id maximum, or -inf when the
// best-ranked token is NaN (no token is a maximum).
FG_SAMPLING_HD float logprob_max_from_best(float best_logit) {
  return best_logit != best_logit ? bits_float(kMinusInfBits) : best_logit;
}

}  // namespace fg::sampling
