// backend/cuda/fp8_row_sources.cuh — where the rows an FP8 linear's input is rounded from come
// from, 16 values at a time, and the rounding's scale: shared by the row quantizers
// (fp8_quant_kernels.cu) and the direct decode linear that rounds its own token rows
// (fp8_small_n_linear.cu), so that both produce the same bits (fp8_kernels.h gives the
// arithmetic).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/e4m3_vec.cuh"

namespace fg::cuda {

// A row's scale from its max |v| (or the static scale): max / 448 in IEEE fp32, 1 for a row of
// zeros.
__device__ __forceinline__ float row_scale(float amax, float static_scale) {
  if (static_scale > 0.0f) return static_scale;
  const float s = __fdiv_rn(amax, kE4M3Largest);
  return s == 0.0f ? 1.0f : s;
}

__device__ __forceinline__ uint4 quantize16(const float (&v)[16], float s) {
  return make_uint4(quantize4(v[0], v[1], v[2], v[3], s), quantize4(v[4], v[5], v[6], v[7], s),
                    quantize4(v[8], v[9], v[10], v[11], s), quantize4(v[12], v[13], v[14], v[15], s));
}

// A source gives a row's chunk of 16 values in two steps, fetch (the loads) and values (the
// arithmetic), so that a caller can have several chunks' loads in flight before it uses any;
// load does both. kBatch: the chunks whose loads fit in flight in 32 registers.

// bf16 rows as they are. Read after the PDL wait (an earlier kernel wrote them) through a plain
// pointer, so ld.global: ptxas keeps those behind griddepcontrol.wait (core/cuda/pdl.cuh).
struct Bf16Rows {
  static constexpr int kBatch = 4;
  struct Raw {
    uint4 v[2];
  };
  const bf16* x;
  __device__ __forceinline__ Raw fetch(int64_t row, int chunk, int width) const {
    const uint4* p = reinterpret_cast<const uint4*>(x + row * width) + 2 * chunk;
    return {{p[0], p[1]}};
  }
  __device__ __forceinline__ static void values(const Raw& raw, float (&v)[16]) {
    float a[8], b[8];
    unpack_bf16x8(raw.v[0], a);
    unpack_bf16x8(raw.v[1], b);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      v[e] = a[e];
      v[8 + e] = b[e];
    }
  }
  __device__ __forceinline__ void load(int64_t row, int chunk, int width, float (&v)[16]) const {
    values(fetch(row, chunk, width), v);
  }
};

// ... or silu(gate) * up rounded to bf16: silu_mul_kernel's expression (activation_kernels.cu),
// so that the rounded values are the ones it stores. Gate and up rows lie in_stride apart.
struct SiluMulRows {
  static constexpr int kBatch = 2;
  struct Raw {
    uint4 gate[2], up[2];
  };
  const bf16* gate;
  const bf16* up;
  int64_t in_stride;
  __device__ __forceinline__ Raw fetch(int64_t row, int chunk, int /*width*/) const {
    const uint4* g_p = reinterpret_cast<const uint4*>(gate + row * in_stride) + 2 * chunk;
    const uint4* u_p = reinterpret_cast<const uint4*>(up + row * in_stride) + 2 * chunk;
    return {{g_p[0], g_p[1]}, {u_p[0], u_p[1]}};
  }
  __device__ __forceinline__ static void values(const Raw& raw, float (&v)[16]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float g[8], u[8];
      unpack_bf16x8(raw.gate[h], g);
      unpack_bf16x8(raw.up[h], u);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[8 * h + e] = bf16_round(g[e] / (1.0f + __expf(-g[e])) * u[e]);
    }
  }
  __device__ __forceinline__ void load(int64_t row, int chunk, int width, float (&v)[16]) const {
    values(fetch(row, chunk, width), v);
  }
};

}  // namespace fg::cuda
