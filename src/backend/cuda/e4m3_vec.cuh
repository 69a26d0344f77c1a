// backend/cuda/e4m3_vec.cuh — fp32 values rounded to e4m3 bytes with a scale, as the CPU backend
// rounds them (cpu_fp8.cpp, cpu_attention.cpp): q = v / s in IEEE fp32, clamped to ±448 (which
// also sends NaN to -448, as std::fmax does there), then rounded to nearest even by the hardware
// conversion (cvt.rn.satfinite.e4m3x2.f32). Shared by the activation quantizers and the FP8 KV
// cache write.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

namespace fg::cuda {

constexpr float kE4M3Largest = 448.0f;  // fg::kE4M3Max (core/dtype.h is host-only: fmt)

__device__ __forceinline__ float scaled(float v, float s) {
  return fminf(fmaxf(__fdiv_rn(v, s), -kE4M3Largest), kE4M3Largest);
}

// Four values to four e4m3 bytes, element 0 in the lowest byte (memory order). The conversion
// puts its float2's .x in the low byte.
__device__ __forceinline__ uint32_t quantize4(float a, float b, float c, float d, float s) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(scaled(a, s), scaled(b, s)), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(scaled(c, s), scaled(d, s)), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}

__device__ __forceinline__ uint2 quantize8(const float (&v)[8], float s) {
  return make_uint2(quantize4(v[0], v[1], v[2], v[3], s), quantize4(v[4], v[5], v[6], v[7], s));
}

}  // namespace fg::cuda
