// backend/cuda/mma_e4m3.cuh — e4m3 operands on the f16 tensor cores, shared by the two FP8 decode
// linears (fp8_small_n_linear.cu, streamed_linear.cu).
//
// Every e4m3 value is exact in f16, so the kernels convert both operands to f16 and run
// mma.sync m16n8k16 with fp32 accumulators: exact products, fp32 sums. (The native FP8 tensor-core
// instructions of Hopper do not keep a full fp32 accumulator.)
//
// Fragment convention (the k-order trick of mma_bf16.cuh, at one byte per value): lane (g = lane /
// 4, t = lane % 4) holds 16 contiguous bytes at k = base + 16 t of each row it feeds. 32-bit word
// i of those bytes (k 16 t + 4 i .. + 3) fills the k-slots (2t, 2t+1) with its low two bytes and
// (2t+8, 2t+9) with its high two of the i-th of four m16n8k16 steps, for both operands alike, so a
// dot product over the 64 values of k sees every product once, and 16-byte loads feed the tensor
// cores with no shuffles.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// Two e4m3 (the low and high byte of v) to two f16 (low and high half), exactly, by the hardware
// conversion.
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t v) {
  uint32_t r;
  const unsigned short h = static_cast<unsigned short>(v);
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(h));
  return r;
}

// The same values in the same halves by integer and f16 arithmetic, so that a kernel converting
// both operands can share its conversions between two pipes rather than queue them on one. Bytes
// b0, b1 (selector 0x1404) or b2, b3 (0x3424) of v go to the high byte of each half; shifting the
// 7 bits of exponent and mantissa right by one places them in the f16 fields (bias 15 against 7,
// 3 mantissa bits against 10), which reads as the e4m3 value times 2^-8, e4m3 subnormals included
// (they become f16 subnormals); the f16 multiply by 2^8 is exact and restores the value.
template <unsigned kSelector>
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2_alu(uint32_t v) {
  const uint32_t x = __byte_perm(v, 0u, kSelector);
  const uint32_t scaled = (x & 0x80008000u) | ((x >> 1) & 0x3f803f80u);
  uint32_t r;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(scaled), "r"(0x5c005c00u));  // x 256.0 in each half
  return r;
}

// c += A (16x16, row-major, f16) * B (16x8, col-major, f16) in fp32.
__device__ __forceinline__ void mma_f16_16x8x16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The m16 (A) fragments of the four steps of a 64-wide k slice from the 16 bytes of rows g (lo)
// and g + 8 (hi): a[i] = {row g slots (2t, 2t+1), row g + 8 same, row g slots (2t+8, 2t+9), row
// g + 8 same}. kHigh false: row g + 8 is all zeros (not converted).
template <bool kHigh>
__device__ __forceinline__ void e4m3_a_fragments(const uint4& lo, const uint4& hi, uint32_t (&a)[4][4]) {
  const uint32_t lw[4] = {lo.x, lo.y, lo.z, lo.w}, hw[4] = {hi.x, hi.y, hi.z, hi.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    a[i][0] = e4m3x2_to_f16x2(lw[i]);
    a[i][2] = e4m3x2_to_f16x2(lw[i] >> 16);
    a[i][1] = kHigh ? e4m3x2_to_f16x2(hw[i]) : 0u;
    a[i][3] = kHigh ? e4m3x2_to_f16x2(hw[i] >> 16) : 0u;
  }
}

// The four steps of a 64-wide k slice: A fragments `a` (e4m3_a_fragments), and the n8 side's row g
// as 16 e4m3 bytes b. The kernel converts b once per weight tile, far more often than `a`, so its
// words alternate between the hardware conversion and the integer path: the two pipes share them.
__device__ __forceinline__ void mma_e4m3_k64_slice(float (&c)[4], const uint32_t (&a)[4][4], const uint4& b) {
  const uint32_t bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t b0 = i % 2 == 0 ? e4m3x2_to_f16x2(bw[i]) : e4m3x2_to_f16x2_alu<0x1404>(bw[i]);
    const uint32_t b1 = i % 2 == 0 ? e4m3x2_to_f16x2(bw[i] >> 16) : e4m3x2_to_f16x2_alu<0x3424>(bw[i]);
    mma_f16_16x8x16(c, a[i][0], a[i][1], a[i][2], a[i][3], b0, b1);
  }
}

}  // namespace fg::cuda
