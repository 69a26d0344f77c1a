// tests/gpu/fp8_linear_case.h — FP8 linear problems for the GPU tests of the FP8 matmuls (the
// decode kernels in test_fp8_kernels.cpp, the GEMM in test_fp8_gemm.cpp): random e4m3 token rows
// and weights with scales and a bias, their fp64 reference with a derived bound on the kernel's
// error, and the check of an output element against it.
#pragma once

#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gpu/gpu_test_support.h"

namespace fg::gpu_test {

inline DeviceBuffer device_bf16(const std::vector<uint16_t>& bits, std::initializer_list<int64_t> dims) {
  DeviceBuffer b = device_alloc(DType::kBF16, dims);
  upload(b.tensor, bits);
  return b;
}

inline const __nv_bfloat16* bf16_ptr(const DeviceBuffer& b) { return static_cast<const __nv_bfloat16*>(b.tensor.data); }

// Random e4m3 bytes (never a NaN code): normal values at scales 2^-3 .. 2^3, one in 16 scaled down
// into the e4m3 subnormals.
inline std::vector<uint8_t> random_e4m3(std::mt19937& rng, size_t count) {
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<uint8_t> bytes(count);
  for (auto& b : bytes) {
    const uint32_t r = static_cast<uint32_t>(rng());
    float v = normal(rng) * std::ldexp(1.0f, static_cast<int>(r % 7) - 3);
    if ((r >> 8) % 16 == 0) v *= 0x1p-9f;
    b = float_to_e4m3(std::fmin(std::fmax(v, -kE4M3Max), kE4M3Max));
  }
  return bytes;
}

inline std::vector<float> random_scales(std::mt19937& rng, size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> uniform(lo, hi);
  std::vector<float> s(count);
  for (auto& v : s) v = uniform(rng);
  return s;
}

inline double bf16_half_ulp(double magnitude) {
  if (magnitude < 0x1p-126) return 0x1p-134;  // bf16 subnormal spacing 2^-133
  const int e = static_cast<int>(std::floor(std::log2(magnitude)));
  return std::ldexp(1.0, e - 8);  // 8 significant bits
}

// One linear problem: `rows` token rows (16 for the decode kernels; tests take the first n),
// weights, scales, bias, and the fp64 reference of every (token, output) with the bound on the
// kernel's fp32 error before bf16.
struct LinearCase {
  int64_t out_features = 0, in = 0, rows = 0;
  std::vector<uint8_t> x, w;              // [rows, in], [out_features, in] e4m3
  std::vector<float> x_scales, w_scales;  // [rows], [out_features]
  std::vector<uint16_t> bias;             // [out_features] bf16
  std::vector<double> ref, ref_no_bias;   // [rows, out_features]
  std::vector<double> fp32_bound;         // [rows, out_features]
  DeviceBuffer dx, dx_scales, dw, dw_scales, dbias;
};

// The bound. Products of e4m3 values are exact in the tensor core. Each accumulator is built by a
// chain of at most in / 16 mma steps (all of `in` in one warp when the block has one warp), then
// at most 15 fp32 adds of the other warps' partial sums, so at most in / 16 + 16 roundings; each
// errs by at most 2 ulp (2^-22 relative: the tensor core aligns its addends to the largest and
// truncates, an fp32 add rounds to nearest) of a partial sum bounded by S = sum_k |x_k w_k|. So
// |acc - dot| <= (in / 16 + 16) 2^-22 S. The two scale multiplies and the bias add each round to
// nearest (2^-24 of their result), bounded by 3 * 2^-23 (|scaled S| + |bias|). The bf16 rounding
// adds half an ulp at the value's magnitude, which the check adds itself. `chain_error`: that
// accumulation bound relative to S, for kernels whose accumulation differs (the FP8 GEMM).
inline LinearCase make_linear_case(std::mt19937& rng, int64_t out_features, int64_t in, int64_t rows = 16,
                            double chain_error = 0.0) {
  LinearCase c;
  c.out_features = out_features;
  c.in = in;
  c.rows = rows;
  c.x = random_e4m3(rng, static_cast<size_t>(rows * in));
  c.w = random_e4m3(rng, static_cast<size_t>(out_features * in));
  c.x_scales = random_scales(rng, static_cast<size_t>(rows), 1e-3f, 4e-2f);
  c.w_scales = random_scales(rng, static_cast<size_t>(out_features), 1e-3f, 1e-2f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  c.bias.resize(static_cast<size_t>(out_features));
  for (auto& b : c.bias) b = float_to_bf16(normal(rng));
  std::vector<double> xf(c.x.size()), wf(c.w.size());
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = e4m3_to_float(c.x[i]);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = e4m3_to_float(c.w[i]);
  c.ref.resize(static_cast<size_t>(rows * out_features));
  c.ref_no_bias.resize(c.ref.size());
  c.fp32_bound.resize(c.ref.size());
  const double chain = chain_error > 0.0 ? chain_error : static_cast<double>(in / 16 + 16) * 0x1p-22;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < out_features; ++j) {
      double dot = 0.0, abs_sum = 0.0;
      for (int64_t k = 0; k < in; ++k) {
        const double p = xf[i * in + k] * wf[j * in + k];
        dot += p;
        abs_sum += std::fabs(p);
      }
      const double scale = static_cast<double>(c.x_scales[i]) * c.w_scales[j];
      const double b = bf16_to_float(c.bias[j]);
      const size_t o = static_cast<size_t>(i * out_features + j);
      c.ref_no_bias[o] = dot * scale;
      c.ref[o] = dot * scale + b;
      c.fp32_bound[o] = chain * abs_sum * scale + 3 * 0x1p-23 * (abs_sum * scale + std::fabs(b));
    }
  c.dx = device_alloc(DType::kF8E4M3, {rows, in});
  upload(c.dx.tensor, c.x);
  c.dx_scales = device_alloc(DType::kF32, {rows});
  upload(c.dx_scales.tensor, c.x_scales);
  c.dw = device_alloc(DType::kF8E4M3, {out_features, in});
  upload(c.dw.tensor, c.w);
  c.dw_scales = device_alloc(DType::kF32, {out_features});
  upload(c.dw_scales.tensor, c.w_scales);
  c.dbias = device_bf16(c.bias, {out_features});
  return c;
}

// Checks output (token, column) = got (bf16) against the case's reference, plus `held` (the bf16
// the output held before an add_to_output launch, NaN for a plain store).
struct OutputCheck {
  int64_t failures = 0;
  void check(const LinearCase& c, bool with_bias, int64_t token, int64_t column, uint16_t got_bits, float held,
             const std::string& what) {
    const size_t o = static_cast<size_t>(token * c.out_features + column);
    const double value = with_bias ? c.ref[o] : c.ref_no_bias[o];
    const double bound = c.fp32_bound[o];
    const double got = bf16_to_float(got_bits);
    double want = value, tolerance = bound + bf16_half_ulp(std::fabs(value) + bound);
    if (!std::isnan(held)) {  // bf16(held + bf16(value)): one more rounding, at the sum
      want = static_cast<double>(held) + value;
      tolerance += bf16_half_ulp(std::fabs(want) + tolerance);
    }
    if (std::fabs(got - want) <= tolerance) return;  // NaN (unwritten) fails here
    if (failures++ < 5)
      ADD_FAILURE() << what << ": output (" << token << ", " << column << ") is " << got << ", want " << want
                    << " +- " << tolerance;
  }
};

struct LinearShape {
  int64_t out_features, in;
};

}  // namespace fg::gpu_test
