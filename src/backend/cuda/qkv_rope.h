// backend/cuda/qkv_rope.h — RoPE and the KV-cache write in the store of the q/k/v matmul
// (CudaBackend::rms_norm_qkv_rope_cache_write): the work of rope_kernels.cu without its launch.
//
// RoPE rotates the pair (e, e + hd/2) of each q and k head, and a matmul block owns a few
// consecutive weight rows, never both members of a pair. So the kernel reads the rows of q and k
// in a permuted order (qkv_weight_row): its logical rows 2j and 2j + 1 of a head are the
// weight's rows j and j + hd/2, and the tensor core leaves both sums of a pair in one lane (its
// accumulators 2t and 2t + 1). The weights themselves stay as loaded, and so do the q, k and v
// tensors: the store writes each sum at its true column. The v rows keep their order.
//
// The bits are those of the linear then rope_kernels.cu: each sum is rounded to BF16 as the
// linear stores it, rotated by rope_rotate (the same function, so the same rounding), and rounded
// again; k and v reach the cache slot of their token, or nowhere for a negative slot.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/linear_outputs.h"
#ifdef __CUDACC__
#include "backend/cuda/bf16_vec.cuh"
#endif

namespace fg::cuda {

// The step's RoPE inputs and the cache of one layer. The q, k and v columns are the three parts
// of the matmul's LinearOutputs: q [0, begin[1]), k [begin[1], begin[2]), v [begin[2], begin[3]).
struct QkvRope {
  const int32_t* positions = nullptr;     // [n]
  const int64_t* slot_mapping = nullptr;  // [n]; negative: not written
  const float* cos_sin = nullptr;         // [max_positions, head_dim]: cos of the hd/2 frequencies, then sin
  __nv_bfloat16* k_cache = nullptr;       // [num_slots, nkv * head_dim]
  __nv_bfloat16* v_cache = nullptr;
  int head_dim = 0;
  int max_positions = 0;
  int64_t num_slots = 0;
};

// The weight row the kernel reads for logical row `row`: within the first `rotated` rows (q and
// k), logical rows 2j and 2j + 1 of a head are rows j and j + hd/2; the rest (v) are unpermuted.
// (32-bit: the linear's checks keep its rows below 2^31.)
#ifdef __CUDACC__
__host__ __device__
#endif
inline int qkv_weight_row(int row, int rotated, int head_dim) {
  if (row >= rotated) return row;
  const int head = row / head_dim, e = row - head * head_dim;
  return head * head_dim + (e >> 1) + (e & 1) * (head_dim / 2);
}

#ifdef __CUDACC__
// The rotation of one pair by the angle whose cosine and sine are c and s, with both products
// rounded and added in a fixed order, so that the compiler contracts nothing differently in the
// two kernels that call it.
__device__ __forceinline__ void rope_rotate(float a, float b, float c, float s, float& ra, float& rb) {
  ra = __fmaf_rn(a, c, -__fmul_rn(b, s));
  rb = __fmaf_rn(b, c, __fmul_rn(a, s));
}

// The cosines (then the sines) of token `token`'s position in the table, the position clamped
// into it, as rope_kernels.cu clamps it.
__device__ __forceinline__ const float* rope_angles(const QkvRope& rope, int token) {
  const int pos = min(max(rope.positions[token], 0), rope.max_positions - 1);
  return rope.cos_sin + static_cast<int64_t>(pos) * rope.head_dim;
}

// A pair of token `token`'s sums (bias added) for columns (column, partner): in q and k
// (column < out.begin[2]) a RoPE pair (partner = column + hd/2), rounded to BF16 as a plain store
// would, rotated by the angle whose cosine and sine are c and s (and rounded again at the store);
// in v two plain columns, left as they are.
__device__ __forceinline__ void rotate_qkv_pair(const LinearOutputs& out, int column, float& first, float& second,
                                                float c, float s) {
  if (column < static_cast<int>(out.begin[2])) rope_rotate(bf16_round(first), bf16_round(second), c, s, first, second);
}

// Where token `token`'s k or v value of column `column` goes in the cache: its slot's row, or null
// for a q column, a negative slot (a padded token) or one past the cache.
__device__ __forceinline__ __nv_bfloat16* qkv_cache_at(const LinearOutputs& out, const QkvRope& rope, int column,
                                                       int64_t slot) {
  const int k_begin = static_cast<int>(out.begin[1]), v_begin = static_cast<int>(out.begin[2]);
  if (slot < 0 || slot >= rope.num_slots || column < k_begin) return nullptr;
  const int64_t kv_width = out.begin[3] - v_begin;  // nkv * hd: a cache slot
  return (column < v_begin ? rope.k_cache + (column - k_begin) : rope.v_cache + (column - v_begin)) + slot * kv_width;
}

// The store of one pair of token `token`'s sums (bias added) into the q/k/v parts of `out` and
// the cache: `first` goes to column `column`, `second` to `partner`, rotated in q and k
// (rotate_qkv_pair); k and v also to the token's cache slot `slot` (qkv_cache_at).
__device__ __forceinline__ void store_qkv_pair(const LinearOutputs& out, const QkvRope& rope, int token, int column,
                                               int partner, float first, float second, float c, float s,
                                               int64_t slot) {
  rotate_qkv_pair(out, column, first, second, c, s);
  out.put<__nv_bfloat16>(token, column, first);
  out.put<__nv_bfloat16>(token, partner, second);
  __nv_bfloat16* cache = qkv_cache_at(out, rope, column, slot);
  if (cache == nullptr) return;
  cache[0] = __float2bfloat16_rn(first);
  cache[partner - column] = __float2bfloat16_rn(second);
}

// Token `token`'s outputs (rotated in q and k) at the neighbouring columns `column` (even) and
// column + 1 of one part, as one 4-byte store into `out` (LinearOutputs::put_pair) and, for k and v,
// one into the cache (qkv_cache_at); each value rounded to BF16 as store_qkv_pair would. The
// streamed kernel's launches keep every part's first column a multiple of head_dim, so the pair
// lies in one part at an aligned address. (The direct kernel's lanes hold RoPE partners, not
// neighbours; pairing them through shuffles made the 1B and Qwen2.5-0.5B steps 0.6-2% slower at
// batch 1: bench/RESULTS.md, 2026-12-02.)
__device__ __forceinline__ void store_qkv_columns(const LinearOutputs& out, const QkvRope& rope, int token, int column,
                                                  float lo, float hi, int64_t slot) {
  out.put_pair<__nv_bfloat16>(token, column, lo, hi);
  __nv_bfloat16* cache = qkv_cache_at(out, rope, column, slot);
  if (cache != nullptr) *reinterpret_cast<__nv_bfloat162*>(cache) = __floats2bfloat162_rn(lo, hi);
}
#endif

}  // namespace fg::cuda
