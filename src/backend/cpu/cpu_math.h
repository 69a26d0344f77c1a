// backend/cpu/cpu_math.h — the arithmetic building blocks of the CPU reference backend.
//
// Everything is computed in fp32 (sums of squares in fp64) whatever the storage type, and every
// reduction has one fixed order, so that a row's result never depends on how a batch was split
// across threads or padded.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

namespace fg::cpu {

// Converts `count` elements of a float tensor, starting at element `offset`, to fp32.
inline void load_floats(const Tensor& t, int64_t offset, int64_t count, float* out) {
  switch (t.dtype) {
    case DType::kF32: {
      const float* p = t.as<const float>() + offset;
      for (int64_t i = 0; i < count; ++i) out[i] = p[i];
      return;
    }
    case DType::kBF16: {
      const uint16_t* p = t.as<const uint16_t>() + offset;
      for (int64_t i = 0; i < count; ++i) out[i] = bf16_to_float(p[i]);
      return;
    }
    case DType::kF16: {
      const uint16_t* p = t.as<const uint16_t>() + offset;
      for (int64_t i = 0; i < count; ++i) out[i] = f16_to_float(p[i]);
      return;
    }
    default:
      fail("cpu backend: expected a float tensor, got {}", dtype_name(t.dtype));
  }
}

// Dot product with eight independent partial sums (vectorisable, fixed order).
inline float dot(const float* a, const float* b, int64_t n) {
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) partial[j] += a[i + j] * b[i + j];
  for (; i < n; ++i) partial[i % 8] += a[i] * b[i];
  return ((partial[0] + partial[4]) + (partial[1] + partial[5])) + ((partial[2] + partial[6]) + (partial[3] + partial[7]));
}

// 1 / rms(x) as fp32, with the sum of squares in fp64.
inline float inverse_rms(const float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  float mean = static_cast<float>(sum / static_cast<double>(n));
  return 1.0f / std::sqrt(mean + eps);
}

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

inline void require_f32(const Tensor& t, const char* what) {
  FG_CHECK(t.dtype == DType::kF32, "cpu backend: {} must be F32, got {}", what, dtype_name(t.dtype));
}
inline void require_i32(const Tensor& t, const char* what) {
  FG_CHECK(t.dtype == DType::kI32, "cpu backend: {} must be I32, got {}", what, dtype_name(t.dtype));
}

}  // namespace fg::cpu
