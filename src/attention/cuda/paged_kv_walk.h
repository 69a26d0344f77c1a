// attention/cuda/paged_kv_walk.h — how the `flash` and `split_kv` kernels walk a request's paged
// KV: the tile loader over block_table (BF16 or e4m3 caches), the cp.async ring and its start around the PDL wait (what
// may be read before it: kReadsBeforePdlWait), the four-warp walk of 16 query rows in 16-position
// slices, and the warps' merge at its end. Built on flash_attention_mma.h; included
// only by .cu files.
#pragma once

#include <cuda_fp8.h>

#include <type_traits>

#include "attention/cuda/flash_attention_mma.h"

namespace fg::attn {

// Eight e4m3 cache values (8 bytes, element 0 in the lowest byte) as eight bf16 (16 bytes, element
// 0 lowest): exact, since every e4m3 value is a bf16 value (3 mantissa bits of bf16's 7; e4m3's
// exponents lie inside bf16's range). The conversion goes through f16, which also holds them all.
__device__ __forceinline__ uint4 e4m3x8_to_bf16x8(uint2 raw) {
  uint32_t out[4];
  const uint32_t words[2] = {raw.x, raw.y};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const auto pair = static_cast<__nv_fp8x2_storage_t>(words[i / 2] >> (16 * (i % 2)));
    const float2 f = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3)));
    const __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
    out[i] = *reinterpret_cast<const uint32_t*>(&b);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

__device__ __forceinline__ uint4 ld_shared_16(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr)
               : "memory");
  return v;
}

__device__ __forceinline__ void st_shared_16(uint32_t addr, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Stages of the KV ring of split_kv and of the flash kernel's short walk: two tiles in flight while
// a third is computed on. walk_in_slices' cp.async wait counts are written for it. (The flash
// kernel's 128-row walk rings two stages, so that two of its CTAs fit an SM.)
constexpr int kKvRingStages = 3;

// Loads 64-position (BN) tiles of one KV head from the paged cache into shared memory with
// cp.async. Position p lives in slot block_table[p / block_size] * block_size + p % block_size;
// each thread copies one 16-byte column chunk of kPasses rows. The block ids of the next tile are
// fetched one tile ahead (fetch_blocks) so that the table lookup's latency is hidden behind the
// compute of the current tile instead of stalling the issue of the copies.
//
// kFp8: the cache holds e4m3 bytes (--kv-cache-dtype fp8). A thread's 16-byte chunk is then 16
// values, copied by cp.async as the bf16 chunks are, into the upper half of the stage (its raw
// e4m3 tile, [BN][HD] bytes unswizzled), where the bf16 tile converted from it later lands. Once
// the tile has landed, convert() turns it into the same swizzled bf16 tile the BF16 cache gives
// (e4m3x8_to_bf16x8: exact), so the MMAs read what they read there; the scales are applied outside
// the walk (k_scale folded into the softmax scale, v_scale into the output). The copies stay in
// flight behind the compute of earlier tiles as the bf16 copies do. (Loads into registers, which
// stall the thread until they land, leave the walk waiting on memory at every tile: at 192
// requests of 1,088 positions on an H100, the FP8 weights' decode step with an e4m3 cache took
// 1.04x (flash) and 1.37x (split_kv) the BF16 cache's time that way, and 0.83x (flash) on the
// ring; bench/RESULTS.md, 2026-12-07.)
template <int HD, int BN, int NT, bool kFp8 = false>
struct PagedKvLoader {
  using Element = std::conditional_t<kFp8, uint8_t, __nv_bfloat16>;
  static constexpr int kValuesPerChunk = 16 / sizeof(Element);
  static constexpr int kChunksPerRow = HD / kValuesPerChunk;
  static constexpr uint32_t kRawOffset = BN * HD;  // the raw e4m3 tile's bytes past the stage's start
  static constexpr int kRowsPerPass = NT / kChunksPerRow;
  static constexpr int kPasses = BN / kRowsPerPass;
  static_assert(NT % kChunksPerRow == 0 && BN % kRowsPerPass == 0, "loader shape");

  const Element* k_head;  // k cache + kv_head * HD: slot s of this head at k_head + s * slot_stride
  const Element* v_head;
  const int* table_row;  // block_table row of the request
  int64_t slot_stride;   // elements between slots: nkv * HD
  int block_size;
  uint32_t block_magic;  // ceil(2^32 / block_size): p / block_size == umulhi(p, magic) while p * block_size < 2^32
  int chunk, row0;       // this thread's chunk column and first row
  int blocks[kPasses];   // block ids of the tile that issue() copies next

  __device__ __forceinline__ void init(const void* k_cache, const void* v_cache, int kv_head, int num_kv_heads,
                                       const int* table, int block_size_, uint32_t magic) {
    slot_stride = static_cast<int64_t>(num_kv_heads) * HD;
    k_head = static_cast<const Element*>(k_cache) + static_cast<int64_t>(kv_head) * HD;
    v_head = static_cast<const Element*>(v_cache) + static_cast<int64_t>(kv_head) * HD;
    table_row = table;
    block_size = block_size_;
    block_magic = magic;
    chunk = threadIdx.x % kChunksPerRow;
    row0 = threadIdx.x / kChunksPerRow;
  }

  __device__ __forceinline__ int block_of(int p) const {
    return static_cast<int>(__umulhi(static_cast<uint32_t>(p), block_magic));
  }

  // True when the tile starting at tile_base holds a position in [written_begin, kv_end).
  __device__ __forceinline__ static bool has_written_rows(int tile_base, int kv_end, int written_begin) {
    return max(tile_base, written_begin) < min(tile_base + BN, kv_end);
  }

  // Block ids of the tile starting at tile_base; positions at or past kv_end are never looked up
  // (their table entries may be stale or out of the request's row).
  __device__ __forceinline__ void fetch_blocks(int tile_base, int kv_end) {
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int p = tile_base + row0 + i * kRowsPerPass;
      blocks[i] = p < kv_end ? __ldg(table_row + block_of(p)) : 0;
    }
  }

  // Copies K and V rows [tile_base, tile_base + BN) into the swizzled tiles at sk and sv, with
  // the block ids of the last fetch_blocks(tile_base, kv_end).
  __device__ __forceinline__ void issue(int tile_base, int kv_end, uint32_t sk, uint32_t sv) const {
    issue_part(tile_base, kv_end, sk, sv, kv_end, false);
  }

  // The part of issue() that this step's attention may copy before the kernel that writes the
  // step's own KV rows has finished (PDL): rows at positions [written_begin, kv_end) are that
  // kernel's (RoPE and the cache write), every other row is an earlier step's or zero fill. With
  // `written` false, copies every other row; with it true, only the written ones. Each row is
  // copied exactly once over the two calls, so no two copies race for the same bytes.
  __device__ __forceinline__ void issue_part(int tile_base, int kv_end, uint32_t sk, uint32_t sv, int written_begin,
                                             bool written) const {
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int row = row0 + i * kRowsPerPass;
      const int p = tile_base + row;
      const bool valid = p < kv_end;
      if ((valid && p >= written_begin) != written) continue;
      const int64_t slot = static_cast<int64_t>(blocks[i]) * block_size + (p - block_of(p) * block_size);
      const int64_t offset = valid ? slot * slot_stride + chunk * kValuesPerChunk : 0;
      const uint32_t dst = kFp8 ? kRawOffset + row * HD + chunk * 16 : swizzle<HD>(row, chunk);
      cp_async_16(sk + dst, k_head + offset, valid);
      cp_async_16(sv + dst, v_head + offset, valid);
    }
  }

  // With an e4m3 cache, the tile of the stage at sk / sv (landed: this thread's copies waited for)
  // from its raw half into its bf16 tile. Each thread converts the chunks it copied, so it reads no
  // other thread's copies; the barrier between the reads and the writes keeps every raw chunk
  // from being overwritten before its thread has read it. The caller's barrier after this call
  // then publishes the bf16 tile, as it publishes the copies of a BF16 tile. A no-op for BF16.
  __device__ __forceinline__ void convert(uint32_t sk, uint32_t sv) const {
    if constexpr (kFp8) {
      uint4 k8[kPasses], v8[kPasses];
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        const uint32_t raw = kRawOffset + (row0 + i * kRowsPerPass) * HD + chunk * 16;
        k8[i] = ld_shared_16(sk + raw);
        v8[i] = ld_shared_16(sv + raw);
      }
      __syncthreads();
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        const int row = row0 + i * kRowsPerPass;
        const uint32_t lo = swizzle<HD>(row, 2 * chunk), hi = swizzle<HD>(row, 2 * chunk + 1);
        st_shared_16(sk + lo, e4m3x8_to_bf16x8(make_uint2(k8[i].x, k8[i].y)));
        st_shared_16(sk + hi, e4m3x8_to_bf16x8(make_uint2(k8[i].z, k8[i].w)));
        st_shared_16(sv + lo, e4m3x8_to_bf16x8(make_uint2(v8[i].x, v8[i].y)));
        st_shared_16(sv + hi, e4m3x8_to_bf16x8(make_uint2(v8[i].z, v8[i].w)));
      }
    } else {
      (void)sk, (void)sv;
    }
  }
};

// The start of a KV ring of S stages under PDL (pdl.cuh), in two halves around the kernel's wait
// for the kernel before it (RoPE and the cache write), which writes the step's own rows, positions
// [before, kv_end). Before the wait: the first S - 1 tiles from kv_begin (of num_tiles) without
// those rows, one cp.async group each. After the wait and the caller's copies of Q: the step's
// rows of those tiles, in one group with Q, and the block ids of the next tile. The walks' waits
// then count these groups (walk_in_slices; the flash kernel's 128-row walk, a 2-stage ring).
//
// Both halves issue stage st of the ring: the block ids of its tile, then its rows before (or,
// after the wait, from) `before`.
template <int HD, int BN, int NT, bool F>
__device__ __forceinline__ void issue_ring_stage(PagedKvLoader<HD, BN, NT, F>& kv, int st, int kv_begin, int kv_end,
                                                 int before, uint32_t sk0, uint32_t sv0, bool after_wait) {
  constexpr uint32_t kStageBytes = BN * HD * 2;
  kv.fetch_blocks(kv_begin + st * BN, kv_end);
  kv.issue_part(kv_begin + st * BN, kv_end, sk0 + st * kStageBytes, sv0 + st * kStageBytes, before, after_wait);
}
template <int S = kKvRingStages, int HD, int BN, int NT, bool F>
__device__ __forceinline__ void start_ring_before_wait(PagedKvLoader<HD, BN, NT, F>& kv, int kv_begin, int kv_end,
                                                       int num_tiles, int before, uint32_t sk0, uint32_t sv0) {
#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    if (st < num_tiles) issue_ring_stage(kv, st, kv_begin, kv_end, before, sk0, sv0, false);
    cp_async_commit();
  }
}
template <int S = kKvRingStages, int HD, int BN, int NT, bool F>
__device__ __forceinline__ void finish_ring_start(PagedKvLoader<HD, BN, NT, F>& kv, int kv_begin, int kv_end,
                                                  int num_tiles, int before, uint32_t sk0, uint32_t sv0) {
#pragma unroll
  for (int st = 0; st < S - 1; ++st)
    if (st < num_tiles && kv.has_written_rows(kv_begin + st * BN, kv_end, before))
      issue_ring_stage(kv, st, kv_begin, kv_end, before, sk0, sv0, true);
  cp_async_commit();
  if (S - 1 < num_tiles) kv.fetch_blocks(kv_begin + (S - 1) * BN, kv_end);
}

// The walk of 16 packed query rows on four warps, each taking a 16-position slice of every 64-
// position KV tile (a decode's G heads: one warp per 16 rows would leave three idle): num_tiles
// tiles from kv_begin (positions from kv_end on zero-filled and masked) through the KV ring at
// sk0 / sv0, which the caller has started (start_ring_before_wait, finish_ring_start, Q's 16 rows
// at sq). Row g + 8r of the tile sees positions below horizon[r]; slices from walk_end on are past
// every row's horizon and skipped (exactly: they would be fully masked). Returns with the warp's
// O, m and l, and the ring drained.
template <int HD, int NT, bool F>
__device__ __forceinline__ void walk_in_slices(PagedKvLoader<HD, 64, NT, F>& kv, uint32_t sq, uint32_t sk0, uint32_t sv0,
                                               int kv_begin, int kv_end, int num_tiles, int walk_end,
                                               const int (&horizon)[2],
                                               float scale_log2, float (&o)[HD / 8][4], float (&m)[2],
                                               float (&l)[2]) {
  static_assert(NT == 128, "four warps of 16-position slices per 64-position tile");
  static_assert(kKvRingStages == 3, "the wait counts below are written for three stages");
  constexpr int kBN = 64, kStages = kKvRingStages;
  constexpr uint32_t kStageBytes = kBN * HD * 2;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  uint32_t qa[HD / 16][4];
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  m[0] = m[1] = -INFINITY;
  l[0] = l[1] = 0.0f;
  for (int j = 0; j < num_tiles; ++j) {
    const int next = j + kStages - 1;  // its stage was last read in iteration j - 1 (ended by a barrier)
    if (next < num_tiles)
      kv.issue(kv_begin + next * kBN, kv_end, sk0 + (next % kStages) * kStageBytes, sv0 + (next % kStages) * kStageBytes);
    cp_async_commit();
    if (next + 1 < num_tiles) kv.fetch_blocks(kv_begin + (next + 1) * kBN, kv_end);
    // Tile j and the group of Q and the step's rows: at j = 0 the one tile issued since that
    // group may be pending; later, the kStages - 1 tiles issued after tile j (which, at j = 1,
    // are all issued after that group).
    if (j == 0) cp_async_wait<kStages - 2>();
    else cp_async_wait<kStages - 1>();
    const int stage = j % kStages;
    kv.convert(sk0 + stage * kStageBytes, sv0 + stage * kStageBytes);
    __syncthreads();
    if (j == 0) load_q_fragments<HD>(qa, sq, 0, lane);
    const int slice = kv_begin + j * kBN + warp * 16;
    if (slice < walk_end) {
      attend_tile<HD, 2>(o, m, l, qa, sk0 + stage * kStageBytes, sv0 + stage * kStageBytes, warp * 16, slice, horizon,
                         kv_end, scale_log2, lane);
    }
    __syncthreads();
  }
  cp_async_wait<0>();
  __syncthreads();  // the KV area is free for the merge
}

// Warps that walked slices of every KV tile for the same 16 query rows meet through shared memory
// (the KV area, free after the walk): [W][16][HD + 8] fp32 O (8 floats of padding keep the float2
// stores conflict-free), then m [W][16] and l [W][16].
template <int HD, int W>
constexpr int slice_state_bytes() {
  return (W * 16 * (HD + 8) + 2 * W * 16) * 4;
}

// Writes this warp's O, m and l (l summed over its quad) into the state; the caller then syncs.
template <int HD, int W>
__device__ __forceinline__ void store_slice_state(float* state, const float (&o)[HD / 8][4], const float (&m)[2],
                                                  float (&l)[2], int warp, int lane) {
  constexpr int kPitch = HD + 8;
  const int g = lane >> 2, tq = lane & 3;
  float* s_m = state + W * 16 * kPitch;
  float* s_l = s_m + W * 16;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(kFullMask, l[r], 1);
    l[r] += __shfl_xor_sync(kFullMask, l[r], 2);
  }
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) {
    *reinterpret_cast<float2*>(state + (warp * 16 + g) * kPitch + d * 8 + 2 * tq) = make_float2(o[d][0], o[d][1]);
    *reinterpret_cast<float2*>(state + (warp * 16 + g + 8) * kPitch + d * 8 + 2 * tq) = make_float2(o[d][2], o[d][3]);
  }
  if (tq == 0) {
    s_m[warp * 16 + g] = m[0];
    s_m[warp * 16 + g + 8] = m[1];
    s_l[warp * 16 + g] = l[0];
    s_l[warp * 16 + g + 8] = l[1];
  }
}

// Row `row`'s columns [4 c4, 4 c4 + 4) merged over the W warps in warp order: the normalized
// output (zeros when no key was visible), and its log2-domain log-sum-exp in lse (-inf then).
template <int HD, int W>
__device__ __forceinline__ float4 merge_slice_row(const float* state, int row, int c4, float& lse) {
  constexpr int kPitch = HD + 8;
  const float* s_m = state + W * 16 * kPitch;
  const float* s_l = s_m + W * 16;
  float mx = -INFINITY;
#pragma unroll
  for (int w = 0; w < W; ++w) mx = fmaxf(mx, s_m[w * 16 + row]);
  const float base = mx == -INFINITY ? 0.0f : mx;
  float sum = 0.0f;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int w = 0; w < W; ++w) {  // fixed warp order
    const float f = exp2f(s_m[w * 16 + row] - base);
    const float4 x = *reinterpret_cast<const float4*>(state + (w * 16 + row) * kPitch + c4 * 4);
    sum += s_l[w * 16 + row] * f;
    acc.x += f * x.x;
    acc.y += f * x.y;
    acc.z += f * x.z;
    acc.w += f * x.w;
  }
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  lse = sum > 0.0f ? base + log2f(sum) : -INFINITY;
  return make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
}

}  // namespace fg::attn
