// core/dtype.h — element types of tensors and their conversions to and from float.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>

#include "core/error.h"

namespace fg {

// kF8E4M3 is float8_e4m3fn (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; no infinities,
// S.1111.111 is NaN, ±448 the largest finite values): the storage of FP8 checkpoints' weights.
enum class DType : uint8_t { kBF16, kF16, kF32, kI32, kI64, kF8E4M3 };

size_t dtype_size(DType dtype);
// The safetensors spelling ("BF16", "F16", "F32", "I32", "I64", "F8_E4M3").
std::string_view dtype_name(DType dtype);
// Parses a safetensors dtype string; nullopt for a type fullgraph does not handle.
std::optional<DType> parse_dtype(std::string_view name);

inline float bf16_to_float(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

// Round to nearest even, as PyTorch does; NaN stays NaN.
inline uint16_t float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// The dtype of a C++ element type that host code reads and writes directly (the 32- and 64-bit
// types; 16-bit floats are stored as uint16_t bits and converted explicitly).
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kI32;
  else {
    static_assert(std::is_same_v<T, int64_t>, "dtype_of: F32, I32 and I64 have host element types");
    return DType::kI64;
  }
}

// Calls f(T{}) with the host element type T of `dtype` (F32, I32 or I64; asserts on the others).
template <typename F>
void visit_host_type(DType dtype, F&& f);

float f16_to_float(uint16_t bits);

// Every e4m3 value is exactly a float.
float e4m3_to_float(uint8_t bits);
// Round to nearest even, as torch's .to(torch.float8_e4m3fn) does for |value| <= 448; larger
// magnitudes saturate to ±448 (torch gives NaN there, which is why FP8 recipes clamp first, and
// this is only ever called on clamped values). NaN stays NaN.
uint8_t float_to_e4m3(float value);
constexpr float kE4M3Max = 448.0f;
uint16_t float_to_f16(float value);

// n values of type `from` (BF16, F16 or F32) to BF16, each rounded to nearest even.
void convert_to_bf16(const void* src, DType from, uint16_t* dst, int64_t n);

template <typename F>
void visit_host_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32: f(float{}); return;
    case DType::kI32: f(int32_t{}); return;
    case DType::kI64: f(int64_t{}); return;
    default: break;
  }
  FG_ASSERT(false && "16-bit floats have no host element type");
}

}  // namespace fg
