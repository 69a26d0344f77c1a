// backend/cuda/mma_bf16.cuh — the one tensor-core instruction the small-n linears use, and the
// fragment convention they share.
//
// Convention: lane (g = lane / 4, t = lane % 4) holds 8 contiguous values at k = base + 8 t of
// token rows g and g + 8 and of weight row g. A dot product does not care in which order k is
// visited as long as both operands agree, so those 8 values serve as the fragment pairs
// (k 2t.., k 2t+8..) of two m16n8k16 steps, and 16-byte loads feed the tensor cores with no
// shuffles. The accumulator i of lane (g, t) is token row g (+8 for i >= 2), weight row 2t (+1
// for odd i).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// c += A (16x16, row-major, bf16) * B (16x8, col-major, bf16) in fp32.
__device__ __forceinline__ void mma_16x8x16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Two m16n8k16 steps over 8 contiguous k values per lane (the convention above): tokens lo (row
// g) and hi (row g + 8), weights wv (row g).
__device__ __forceinline__ void mma_k32_slice(float (&c)[4], const uint4& lo, const uint4& hi, const uint4& wv) {
  mma_16x8x16(c, lo.x, hi.x, lo.y, hi.y, wv.x, wv.y);
  mma_16x8x16(c, lo.z, hi.z, lo.w, hi.w, wv.z, wv.w);
}

}  // namespace fg::cuda
