// core/dtype.cpp — dtype names, sizes and IEEE half-precision and e4m3 conversion.
#include "core/dtype.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace fg {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF8E4M3:
      return 1;
    case DType::kBF16:
    case DType::kF16:
      return 2;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kI64:
      return 8;
  }
  FG_ASSERT(false);
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBF16: return "BF16";
    case DType::kF16: return "F16";
    case DType::kF32: return "F32";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kF8E4M3: return "F8_E4M3";
  }
  FG_ASSERT(false);
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "BF16") return DType::kBF16;
  if (name == "F16") return DType::kF16;
  if (name == "F32") return DType::kF32;
  if (name == "I32") return DType::kI32;
  if (name == "I64") return DType::kI64;
  if (name == "F8_E4M3") return DType::kF8E4M3;
  return std::nullopt;
}

float f16_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);  // inf or NaN
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {
    // Subnormal half: normalise the mantissa into a float exponent.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    out = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &out, sizeof(value));
  return value;
}

uint16_t float_to_f16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: add the value to 0.5 so the FPU rounds at the half ulp.
    float magnitude;
    std::memcpy(&magnitude, &abs, sizeof(magnitude));
    float shifted = magnitude + 0.5f;
    uint32_t shifted_bits;
    std::memcpy(&shifted_bits, &shifted, sizeof(shifted_bits));
    return static_cast<uint16_t>(sign | (shifted_bits - 0x3f000000u));
  }
  uint32_t mantissa_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mantissa_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float e4m3_to_float(uint8_t bits) {
  const float sign = (bits & 0x80u) ? -1.0f : 1.0f;
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m * 2^-9
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);     // 1.m * 2^(e-7)
}

uint8_t float_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7f;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float magnitude = std::fabs(value);
  if (magnitude >= kE4M3Max) return sign | 0x7e;
  // Scaling by a power of two is exact, so nearbyint (round to nearest even, the default mode)
  // rounds the value itself at its e4m3 spacing.
  if (magnitude < 0x1p-6f) {
    // Subnormal spacing 2^-9; a result of 8 is the smallest normal, whose code is also 8.
    return sign | static_cast<uint8_t>(std::nearbyint(magnitude * 0x1p9f));
  }
  int exponent;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  int scaled = static_cast<int>(std::nearbyint(std::ldexp(magnitude, 4 - exponent)));  // in [8, 16]
  int biased = exponent - 1 + 7;
  if (scaled == 16) {
    scaled = 8;
    ++biased;
  }
  // magnitude < 448 rounds to at most 448 = code 0x7e, so no NaN code comes out here.
  return sign | static_cast<uint8_t>((biased << 3) | (scaled - 8));
}

void convert_to_bf16(const void* src, DType from, uint16_t* dst, int64_t n) {
  // f16 -> f32 is exact, so each value is rounded once, as torch's .to(torch.bfloat16) does.
  switch (from) {
    case DType::kBF16: std::memcpy(dst, src, static_cast<size_t>(n) * 2); return;
    case DType::kF16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(f16_to_float(in[i]));
      return;
    }
    case DType::kF32: {
      const auto* in = static_cast<const float*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(in[i]);
      return;
    }
    default: FG_CHECK(false, "convert_to_bf16: {} is not a floating-point type", dtype_name(from));
  }
}

}  // namespace fg
