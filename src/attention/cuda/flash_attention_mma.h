// attention/cuda/flash_attention_mma.h — device building blocks shared by the `flash` and
// `split_kv` kernels: cp.async copies, ldmatrix, the bf16 m16n8k16 tensor-core MMA with fp32
// accumulation, the swizzled shared-memory tile layout, the paged KV tile loader and the per-warp
// online-softmax step. Included only by .cu files (device code, no host-side checks here).
//
// Fragment layout of mma.m16n8k16 used throughout (lane = 4 * g + t, g = lane / 4, t = lane % 4):
//   C/D (16x8 fp32):   c0, c1 -> row g,     cols 2t, 2t+1;  c2, c3 -> row g + 8, same cols.
//   A (16x16 bf16):    a0a1 -> (row g, k 2t..2t+1), a2a3 -> (row g+8, k 2t..), a4a5 -> (row g,
//                      k 2t+8..), a6a7 -> (row g+8, k 2t+8..).
//   B (16x8 bf16, k x n, "col"): b0b1 -> (k 2t..2t+1, n g), b2b3 -> (k 2t+8.., n g).
// So the fp32 accumulators of S = Q K^T for columns [16j, 16j + 16) are, once rounded to bf16, the
// A fragment of P for the k-step j of O += P V, with no shuffles (the usual FlashAttention-2 trick).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace fg::attn {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy; when !valid nothing is read and the 16 bytes are zero-filled, so
// positions past the context hold zeros, never stale data that could turn 0 * x into NaN.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b on the tensor cores: bf16 operands, fp32 accumulation.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair, the first in the low half (the lower column of a fragment).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Byte offset of 16-byte chunk `chunk` (8 bf16) of row `row` in a [rows][HD] bf16 tile in shared
// memory. The chunk index is XORed with row % 8: the 8 rows an ldmatrix reads at one logical
// chunk then land in 8 different 16-byte bank groups, so neither ldmatrix nor the cp.async
// writes conflict (rows are 128 or 256 bytes, which would otherwise put them all in one group).
template <int HD>
__device__ __forceinline__ uint32_t swizzle(int row, int chunk) {
  static_assert(HD / 8 >= 8, "the XOR swizzle needs at least 8 chunks per row");
  return static_cast<uint32_t>(row * (HD * 2) + ((chunk ^ (row & 7)) << 4));
}

// Stages of the KV ring of both kernels: two tiles in flight while a third is computed on. The
// ring's cp.async wait counts (walk_in_slices, the flash kernel's 64-row walk) are written for it.
constexpr int kKvRingStages = 3;

// Loads 64-position (BN) tiles of one KV head from the paged cache into shared memory with
// cp.async. Position p lives in slot block_table[p / block_size] * block_size + p % block_size;
// each thread copies one 16-byte column chunk of kPasses rows. The block ids of the next tile are
// fetched one tile ahead (fetch_blocks) so that the table lookup's latency is hidden behind the
// compute of the current tile instead of stalling the issue of the copies.
template <int HD, int BN, int NT>
struct PagedKvLoader {
  static constexpr int kChunksPerRow = HD / 8;
  static constexpr int kRowsPerPass = NT / kChunksPerRow;
  static constexpr int kPasses = BN / kRowsPerPass;
  static_assert(NT % kChunksPerRow == 0 && BN % kRowsPerPass == 0, "loader shape");

  const __nv_bfloat16* k_head;  // k cache + kv_head * HD: slot s of this head at k_head + s * slot_stride
  const __nv_bfloat16* v_head;
  const int* table_row;  // block_table row of the request
  int64_t slot_stride;   // elements between slots: nkv * HD
  int block_size;
  uint32_t block_magic;  // ceil(2^32 / block_size): p / block_size == umulhi(p, magic) while p * block_size < 2^32
  int chunk, row0;       // this thread's chunk column and first row
  int blocks[kPasses];   // block ids of the tile that issue() copies next

  __device__ __forceinline__ void init(const __nv_bfloat16* k_cache, const __nv_bfloat16* v_cache, int kv_head,
                                       int num_kv_heads, const int* table, int block_size_, uint32_t magic) {
    slot_stride = static_cast<int64_t>(num_kv_heads) * HD;
    k_head = k_cache + static_cast<int64_t>(kv_head) * HD;
    v_head = v_cache + static_cast<int64_t>(kv_head) * HD;
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
      const int64_t offset = valid ? slot * slot_stride + chunk * 8 : 0;
      const uint32_t dst = swizzle<HD>(row, chunk);
      cp_async_16(sk + dst, k_head + offset, valid);
      cp_async_16(sv + dst, v_head + offset, valid);
    }
  }
};

// The start of the KV ring under PDL (pdl.cuh), in two halves around the kernel's wait for
// the kernel before it (RoPE and the cache write), which writes the step's own rows, positions
// [before, kv_end). Before the wait: the first kKvRingStages - 1 tiles from kv_begin (of num_tiles)
// without those rows, one cp.async group each. After the wait and the caller's copies of Q: the
// step's rows of those tiles, in one group with Q, and the block ids of the next tile. The walk's waits then count
// these groups (walk_in_slices).
template <int HD, int BN, int NT>
__device__ __forceinline__ void start_ring_before_wait(PagedKvLoader<HD, BN, NT>& kv, int kv_begin, int kv_end,
                                                       int num_tiles, int before, uint32_t sk0, uint32_t sv0) {
  constexpr uint32_t kStageBytes = BN * HD * 2;
#pragma unroll
  for (int st = 0; st < kKvRingStages - 1; ++st) {
    if (st < num_tiles) {
      kv.fetch_blocks(kv_begin + st * BN, kv_end);
      kv.issue_part(kv_begin + st * BN, kv_end, sk0 + st * kStageBytes, sv0 + st * kStageBytes, before, false);
    }
    cp_async_commit();
  }
}
template <int HD, int BN, int NT>
__device__ __forceinline__ void finish_ring_start(PagedKvLoader<HD, BN, NT>& kv, int kv_begin, int kv_end,
                                                  int num_tiles, int before, uint32_t sk0, uint32_t sv0) {
  constexpr uint32_t kStageBytes = BN * HD * 2;
#pragma unroll
  for (int st = 0; st < kKvRingStages - 1; ++st) {
    const int tile_base = kv_begin + st * BN;
    if (st < num_tiles && kv.has_written_rows(tile_base, kv_end, before)) {
      kv.fetch_blocks(tile_base, kv_end);
      kv.issue_part(tile_base, kv_end, sk0 + st * kStageBytes, sv0 + st * kStageBytes, before, true);
    }
  }
  cp_async_commit();
  if (kKvRingStages - 1 < num_tiles) kv.fetch_blocks(kv_begin + (kKvRingStages - 1) * BN, kv_end);
}

// One online-softmax step over a warp's scores of one KV tile. s holds scaled scores in the log2
// domain (score * scale * log2 e), masked entries -inf; rows g (entries 0, 1) and g + 8 (2, 3).
// On return s holds p = 2^(s - m_new), m the running maxima, l the running per-thread partial sums
// (reduced across the quad only at the end), and alpha the factor the caller applies to its O
// accumulators. A row with no visible key so far keeps m = -inf and uses 0 as its reference, so
// no (-inf) - (-inf) NaN appears.
template <int NS>
__device__ __forceinline__ void online_softmax_step(float (&s)[NS][4], float (&m)[2], float (&l)[2],
                                                    float (&alpha)[2]) {
  float mx[2] = {m[0], m[1]};
#pragma unroll
  for (int n = 0; n < NS; ++n) {
    mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
  }
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(kFullMask, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(kFullMask, mx[r], 2));
    base[r] = mx[r] == -INFINITY ? 0.0f : mx[r];
    alpha[r] = exp2f(m[r] - base[r]);
    m[r] = mx[r];
  }
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int n = 0; n < NS; ++n) {
    s[n][0] = exp2f(s[n][0] - base[0]);
    s[n][1] = exp2f(s[n][1] - base[0]);
    s[n][2] = exp2f(s[n][2] - base[1]);
    s[n][3] = exp2f(s[n][3] - base[1]);
    sum[0] += s[n][0] + s[n][1];
    sum[1] += s[n][2] + s[n][3];
  }
  l[0] = l[0] * alpha[0] + sum[0];
  l[1] = l[1] * alpha[1] + sum[1];
}

// Loads the A fragments of a warp's 16 query rows (starting at q_row0 of the swizzled Q tile at
// sq) for all HD / 16 k-steps: matrix i of the x4 load is (rows + 8 * (i & 1), k chunk + (i >> 1)).
template <int HD>
__device__ __forceinline__ void load_q_fragments(uint32_t (&qa)[HD / 16][4], uint32_t sq, int q_row0, int lane) {
  const int i = lane >> 3;
  const int row = q_row0 + (i & 1) * 8 + (lane & 7);
#pragma unroll
  for (int ks = 0; ks < HD / 16; ++ks) ldmatrix_x4(qa[ks], sq + swizzle<HD>(row, ks * 2 + (i >> 1)));
}

// s[2j + e] (8 KV columns each) = Q K^T for the NS * 8 KV rows starting at k_row0 of the tile at sk.
// Matrix i of each x4 load is (KV rows + 8 * (i >> 1), k chunk + (i & 1)): b0b1 and b2b3 of two
// adjacent n-tiles.
template <int HD, int NS>
__device__ __forceinline__ void qk_scores(float (&s)[NS][4], const uint32_t (&qa)[HD / 16][4], uint32_t sk,
                                          int k_row0, int lane) {
  static_assert(NS % 2 == 0, "n-tiles come in pairs");
#pragma unroll
  for (int n = 0; n < NS; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
  const int i = lane >> 3;
#pragma unroll
  for (int ks = 0; ks < HD / 16; ++ks) {
#pragma unroll
    for (int np = 0; np < NS / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, sk + swizzle<HD>(k_row0 + np * 16 + (i >> 1) * 8 + (lane & 7), ks * 2 + (i & 1)));
      mma_bf16(s[2 * np], qa[ks], b[0], b[1]);
      mma_bf16(s[2 * np + 1], qa[ks], b[2], b[3]);
    }
  }
}

// o += P V for the NS * 8 KV rows starting at v_row0 of the tile at sv (p = the s array after
// online_softmax_step). Matrix i of each transposed x4 load is (KV rows + 8 * (i & 1), dim chunk
// + (i >> 1)): b0b1 and b2b3 of two adjacent dim n-tiles.
template <int HD, int NS>
__device__ __forceinline__ void pv_accumulate(float (&o)[HD / 8][4], const float (&p)[NS][4], uint32_t sv,
                                              int v_row0, int lane) {
  const int i = lane >> 3;
#pragma unroll
  for (int kk = 0; kk < NS / 2; ++kk) {
    const uint32_t pa[4] = {pack_bf16(p[2 * kk][0], p[2 * kk][1]), pack_bf16(p[2 * kk][2], p[2 * kk][3]),
                            pack_bf16(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                            pack_bf16(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int dp = 0; dp < HD / 16; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sv + swizzle<HD>(v_row0 + kk * 16 + (i & 1) * 8 + (lane & 7), dp * 2 + (i >> 1)));
      mma_bf16(o[2 * dp], pa, b[0], b[1]);
      mma_bf16(o[2 * dp + 1], pa, b[2], b[3]);
    }
  }
}

// One KV tile, or a warp's slice of it, for a warp's 16 query rows: S = Q K^T over the NS * 8 KV
// rows starting at tile_row0 of the tiles at sk / sv (context positions from col0), masked to -inf
// where the position reaches the row's horizon or col_end, else scaled into the log2 domain; then
// one online-softmax step, O rescaled, and O += P V.
template <int HD, int NS>
__device__ __forceinline__ void attend_tile(float (&o)[HD / 8][4], float (&m)[2], float (&l)[2],
                                            const uint32_t (&qa)[HD / 16][4], uint32_t sk, uint32_t sv, int tile_row0,
                                            int col0, const int (&horizon)[2], int col_end, float scale_log2,
                                            int lane) {
  const int tq = lane & 3;
  float s[NS][4];
  qk_scores<HD, NS>(s, qa, sk, tile_row0, lane);
#pragma unroll
  for (int n = 0; n < NS; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = col0 + n * 8 + 2 * tq + (e & 1);
      s[n][e] = (col >= horizon[e >> 1] || col >= col_end) ? -INFINITY : s[n][e] * scale_log2;
    }
  }
  float alpha[2];
  online_softmax_step<NS>(s, m, l, alpha);
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) {
    o[d][0] *= alpha[0];
    o[d][1] *= alpha[0];
    o[d][2] *= alpha[1];
    o[d][3] *= alpha[1];
  }
  pv_accumulate<HD, NS>(o, s, sv, tile_row0, lane);
}

// The walk of 16 packed query rows on four warps, each taking a 16-position slice of every 64-
// position KV tile (a decode's G heads: one warp per 16 rows would leave three idle): num_tiles
// tiles from kv_begin (positions from kv_end on zero-filled and masked) through the KV ring at
// sk0 / sv0, which the caller has started (start_ring_before_wait, finish_ring_start, Q's 16 rows
// at sq). Row g + 8r of the tile sees positions below horizon[r]; slices from walk_end on are past
// every row's horizon and skipped (exactly: they would be fully masked). Returns with the warp's
// O, m and l, and the ring drained.
template <int HD, int NT>
__device__ __forceinline__ void walk_in_slices(PagedKvLoader<HD, 64, NT>& kv, uint32_t sq, uint32_t sk0, uint32_t sv0,
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
    __syncthreads();
    if (j == 0) load_q_fragments<HD>(qa, sq, 0, lane);
    const int slice = kv_begin + j * kBN + warp * 16;
    if (slice < walk_end) {
      const int stage = j % kStages;
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
