// attention/cuda/flash_attention_kernels.cu — the `flash` kernel: variable-length paged causal
// attention for mixed prefill + decode batches on the tensor cores (mma.sync m16n8k16, bf16
// operands, fp32 accumulation and fp32 online softmax), and its launcher.
//
// Work decomposition. The query heads of one GQA group are packed into the M dimension: for KV
// head h, request r owns n_q(r) * G packed rows (row m = token m / G of its chunk, query head
// h * G + m % G), cut into 128-row query tiles, so every KV tile a CTA loads serves the whole group
// (a decode request's G heads share one read of its KV). Tiles are numbered by a prefix sum of
// the per-request tile counts ceil(n_q * G / 128) in request order. The grid is (ceil(n * G / 128) +
// num_reqs, nkv): an upper bound computed from the shapes only, so it is frozen under capture;
// each CTA ranks its tile index against the prefix sums (computed by the CTA itself from
// query_start_loc, no workspace, no pre-kernel) and CTAs past the last tile exit.
//
// Why the contract needs non-decreasing query_start_loc: the rank of tile t is the number of
// requests whose prefix-sum end is <= t — the answer a bisection over the prefix sums gives, and
// only a search when the ends are non-decreasing. A decreasing entry (the seed's -1 padding)
// makes the ends drop: tiles of real requests past the drop are ranked into a padded request,
// fail the ownership check and are never computed, so their output rows keep whatever they held.
// The kernel stays memory-safe on such input (it never writes rows it does not own) but is wrong.
//
// Per CTA: 4 warps. A tile of more than 16 rows (a prefill chunk's) gives each warp 32 packed
// query rows, two m16 tiles that share every K and V fragment it loads from shared memory
// (FlashAttention-2's 128 x 64 tile); its KV tiles (64 positions, 48 at hd 128) come through a
// 2-stage cp.async ring. A tile of at most 16 rows (a decode's G
// heads, a chunk's last rows) would leave three warps idle: there all four take the same rows,
// each a 16-position slice of every KV tile, through a 3-stage ring, and merge at the end. The
// first KV tiles are requested before the PDL wait; S = Q K^T and O += P V run per warp; the online
// softmax is in fp32 in the log2 domain; O is staged through shared memory and written as bf16
// with 16-byte stores. Each request's arithmetic depends only on its own metadata (its tiles never
// mix with another request's), so a row's result is bit-identical in any batch and under any
// padding.
#include "attention/cuda/flash_attention_kernels.h"
#include "attention/cuda/paged_kv_walk.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/pdl.cuh"

namespace fg::attn {
namespace {

constexpr int kWarps = kFlashThreads / 32;
constexpr int kBM = kFlashTileM;
constexpr int kBN = kFlashTileN;
constexpr int kWideStages = kFlashStages;
constexpr int kShortRows = kFlashShortRows;
constexpr int kShortStages = kFlashShortStages;
constexpr int kWarpRows = kBM / kWarps;  // the 128-row walk's rows per warp
constexpr int kWarpMTiles = kWarpRows / 16;
static_assert(kWarpMTiles * 16 * kWarps == kBM, "each warp owns whole m16 tiles");
// Two stages: a third (80 KiB at hd 128, still two CTAs per SM) ran the prefill 1.5-2.7% slower
// (bench/RESULTS.md, 2026-12-01).
static_assert(kWideStages >= 2, "the 128-row walk computes on one tile while the next ones land");
static_assert(kShortStages == kKvRingStages, "the short walk is walk_in_slices, on paged_kv_walk.h's ring");
static_assert(kShortRows == 16, "walk_in_slices walks 16 rows");
static_assert(slice_state_bytes<128, kWarps>() <= 2 * kShortStages * kBN * 128 * 2 &&
                  slice_state_bytes<64, kWarps>() <= 2 * kShortStages * kBN * 64 * 2,
              "the warps' merge fits the KV area");
// Shared memory, bf16 and swizzled. The 128-row walk: Q [128][HD], K [2][flash_wide_tile_n][HD],
// V likewise. The short walk: Q [16][HD], K [3][64][HD], V [3][64][HD].

// Tile count of a request with `num_query` tokens. No clamp: C++ division truncates, so a negative
// num_query (a decreasing query_start_loc) gives a count <= 0 and the prefix sum goes down.
__device__ __forceinline__ int tiles_of(int num_query, int group) {
  return (num_query * group + kBM - 1) / kBM;
}

struct TileAssignment {
  int req;    // request index
  int start;  // its first tile in the prefix-sum numbering
  int count;  // its tile count
};

// Finds the request owning tile t: rank = #{r < num_reqs : end(r) <= t}, end(r) the inclusive
// prefix sum of tile counts, scanned 128 requests at a time by the whole CTA. The thread whose
// request index equals the running rank after its chunk records that request's (start, count);
// the assignment holds only if the final rank's record exists and its range contains t. Must be
// called by every thread of the CTA (it synchronizes).
__device__ bool locate_tile(const int* __restrict__ qsl, int num_reqs, int group, int t, TileAssignment& out) {
  __shared__ int s_warp_sum[kWarps];
  __shared__ int s_found[3];  // request, start, count
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) s_found[0] = -1;
  int running = 0, rank = 0;
  for (int base = 0; base < num_reqs; base += kFlashThreads) {
    const int i = base + tid;
    const int count = i < num_reqs ? tiles_of(qsl[i + 1] - qsl[i], group) : 0;
    int incl = count;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int y = __shfl_up_sync(kFullMask, incl, o);
      if (lane >= o) incl += y;
    }
    if (lane == 31) s_warp_sum[warp] = incl;
    __syncthreads();
    int before = running;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const int v = s_warp_sum[w];
      if (w < warp) before += v;
      running += v;
    }
    const int end = before + incl;
    // Also the barrier that keeps s_warp_sum from being overwritten while another warp reads it.
    rank += __syncthreads_count(i < num_reqs && end <= t);
    if (i == rank && i < num_reqs) {
      s_found[0] = i;
      s_found[1] = end - count;
      s_found[2] = count;
    }
  }
  __syncthreads();
  out = {s_found[0], s_found[1], s_found[2]};
  return out.req == rank && rank < num_reqs && out.count > 0 && t >= out.start && t < out.start + out.count;
}

// What a CTA's walk needs to know of its tile, its request and its pipeline.
struct TileWalk {
  int req;                                      // request index
  int q_begin, m0, valid_rows, group, kv_head;  // packed row m: token q_begin + m / group, head kv_head * group + m % group
  int before, last_h, ctx;                      // positions before the step's chunk; the last row's horizon

  // KV tiles of bn positions up to the last row's horizon.
  __device__ __forceinline__ int kv_tiles(int bn) const { return last_h > 0 ? (last_h + bn - 1) / bn : 0; }
};

// Copies the tile's packed rows [m0, m0 + ROWS) of Q into the swizzled tile at sq (cp.async, in
// the caller's group); rows past the request are zero-filled.
template <int HD, int ROWS>
__device__ __forceinline__ void copy_q_rows(const FlashParams& p, const TileWalk& t, uint32_t sq) {
  constexpr int kChunks = HD / 8;  // 16-byte chunks per row
  constexpr int kRowsPerPass = kFlashThreads / kChunks;
  static_assert(ROWS % kRowsPerPass == 0, "whole passes");
  const __nv_bfloat16* q = static_cast<const __nv_bfloat16*>(p.q);
  const int chunk = threadIdx.x % kChunks;
#pragma unroll
  for (int i = 0; i < ROWS / kRowsPerPass; ++i) {
    const int row = static_cast<int>(threadIdx.x) / kChunks + i * kRowsPerPass;
    const int m = t.m0 + row;
    const int token = t.q_begin + m / t.group;
    const int head = t.kv_head * t.group + m % t.group;
    const bool valid = row < t.valid_rows && token >= 0 && token < p.num_tokens;
    const int64_t offset = valid ? (static_cast<int64_t>(token) * p.num_heads + head) * HD + chunk * 8 : 0;
    cp_async_16(sq + swizzle<HD>(row, chunk), q + offset, valid);
  }
}

// Lays out a walk's shared memory (Q's first ROWS packed rows, then K [S][BN][HD], then V likewise,
// all bf16 and swizzled), points the tile's KV loader at its request's block_table row and KV head,
// and starts the KV ring of S stages around the PDL wait for the kernel before (RoPE and the cache
// write: Q and the step's own KV rows): the earlier rows of the first tiles before it, Q and the
// step's rows after it (paged_kv_walk.h).
template <int S, int ROWS, int HD, int BN, bool F>
__device__ __forceinline__ void start_walk(const FlashParams& p, const TileWalk& t, unsigned char* smem,
                                           PagedKvLoader<HD, BN, kFlashThreads, F>& kv, uint32_t& sq, uint32_t& sk0,
                                           uint32_t& sv0) {
  sq = smem_addr(smem);
  sk0 = sq + ROWS * HD * 2;
  sv0 = sk0 + S * BN * HD * 2;
  kv.init(p.k_cache, p.v_cache, t.kv_head, p.num_kv_heads, p.block_table + static_cast<int64_t>(t.req) * p.max_blocks,
          p.block_size, p.block_magic);
  start_ring_before_wait<S>(kv, 0, t.ctx, t.kv_tiles(BN), t.before, sk0, sv0);
  fg::cuda::wait_for_prerequisite_grids();
  copy_q_rows<HD, ROWS>(p, t, sq);
  finish_ring_start<S>(kv, 0, t.ctx, t.kv_tiles(BN), t.before, sk0, sv0);
}

// A tile of at most 16 packed rows (a decode's G heads, a chunk's last rows), which would leave
// three warps idle: its walk on four warps (walk_in_slices, as split_kv's), the warps' states
// merged in the KV area, its rows written. The choice of this walk depends on the request alone,
// so a row's bits still do not depend on the batch.
template <int HD, bool kFp8>
__device__ __forceinline__ void walk_short_tile(const FlashParams& p, const TileWalk& t, unsigned char* smem) {
  PagedKvLoader<HD, kBN, kFlashThreads, kFp8> kv;
  uint32_t sq, sk0, sv0;
  start_walk<kShortStages, kShortRows>(p, t, smem, kv, sq, sk0, sv0);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2;
  int horizon[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = g + 8 * r;
    horizon[r] = row < t.valid_rows ? t.before + (t.m0 + row) / t.group + 1 : t.last_h;  // padding rows: unstored
  }
  float o[HD / 8][4], m_run[2], l_run[2];
  walk_in_slices<HD, kFlashThreads>(kv, sq, sk0, sv0, 0, t.ctx, t.kv_tiles(kBN), t.last_h, horizon, p.scale_log2, o,
                                    m_run, l_run);

  float* state = reinterpret_cast<float*>(smem + kShortRows * HD * 2);
  store_slice_state<HD, kWarps>(state, o, m_run, l_run, warp, lane);
  __syncthreads();
  __nv_bfloat16* out = static_cast<__nv_bfloat16*>(p.out);
  for (int idx = threadIdx.x; idx < kShortRows * (HD / 4); idx += kFlashThreads) {
    const int row = idx / (HD / 4), c4 = idx % (HD / 4);
    if (row >= t.valid_rows) continue;
    const int m = t.m0 + row;
    const int token = t.q_begin + m / t.group;
    if (token < 0 || token >= p.num_tokens) continue;
    const int head = t.kv_head * t.group + m % t.group;
    float lse;
    float4 merged = merge_slice_row<HD, kWarps>(state, row, c4, lse);
    if constexpr (kFp8) merged = make_float4(merged.x * p.v_scale, merged.y * p.v_scale, merged.z * p.v_scale,
                                             merged.w * p.v_scale);
    *reinterpret_cast<uint2*>(out + (static_cast<int64_t>(token) * p.num_heads + head) * HD + c4 * 4) =
        make_uint2(pack_bf16(merged.x, merged.y), pack_bf16(merged.z, merged.w));
  }
}

// A tile of more than 16 packed rows (a prefill's): warp w walks rows [32 w, 32 w + 32) as two m16
// tiles over every KV tile, through a 2-stage ring; O is staged in the Q tile and written as bf16.
// Q's fragments stay in registers at hd 64 and are re-read from the Q tile at hd 128 (O of 32 rows
// alone takes 128 registers there, and Q would take 64 more). Against the 64-row tile of 16 rows
// per warp, at hd 128 and 512-8192 tokens (bench/RESULTS.md, 2026-12-01): 3-7% faster
// as such, 14-17% with the softmax's ex2.ftz, folded scale, branch-only mask and skipped rescale.
//
// Out of line, its parameters by value (so that nothing of the caller's lives in local memory):
// ptxas then allocates and schedules this loop and the kernel's inlined short walk each on its own.
// With both inlined (64-row tiles then; bench/RESULTS.md, 2026-12-01, three interleaved
// repetitions), prefill of 2k-8k tokens ran 1.5-2.8% slower, flash decode at batch 1 and 1k-32k of context
// 2-7% slower.
template <int HD, bool kFp8>
__device__ __noinline__ void walk_wide_tile(const FlashParams p, const TileWalk t, unsigned char* smem) {
  constexpr int kChunks = HD / 8;  // 16-byte chunks per row
  constexpr int kWN = flash_wide_tile_n(HD);
  constexpr uint32_t kStageBytes = kWN * HD * 2;
  constexpr int kS = kWN / 8;  // 8-column score tiles per m-tile and KV tile
  constexpr int kMT = kWarpMTiles;
  constexpr bool kQInRegs = HD <= 64;
  PagedKvLoader<HD, kWN, kFlashThreads, kFp8> kv;
  uint32_t sq, sk0, sv0;
  start_walk<kWideStages, kBM>(p, t, smem, kv, sq, sk0, sv0);

  const int q_begin = t.q_begin, m0 = t.m0, valid_rows = t.valid_rows, group = t.group, kv_head = t.kv_head;
  const int before = t.before, last_h = t.last_h, ctx = t.ctx, num_kv_tiles = t.kv_tiles(kWN);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const int warp_row0 = warp * kWarpRows;
  const bool warp_active = warp_row0 < valid_rows;
  const int warp_first_h = before + (m0 + warp_row0) / group + 1;
  const int warp_last_h = warp_active ? before + (m0 + min(warp_row0 + kWarpRows - 1, valid_rows - 1)) / group + 1 : 0;
  // Causal horizons of this thread's rows g and g + 8 of each m-tile; rows past the request take the
  // tile's last horizon (finite values, never stored).
  int horizon[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = warp_row0 + mt * 16 + g + 8 * r;
      horizon[mt][r] = row < valid_rows ? before + (m0 + row) / group + 1 : last_h;
    }

  uint32_t qa[kMT][kQInRegs ? HD / 16 : 1][4];
  float o[kMT][HD / 8][4];
  float m_run[kMT][2], l_run[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int d = 0; d < HD / 8; ++d) o[mt][d][0] = o[mt][d][1] = o[mt][d][2] = o[mt][d][3] = 0.0f;
    m_run[mt][0] = m_run[mt][1] = -INFINITY;
    l_run[mt][0] = l_run[mt][1] = 0.0f;
  }

  for (int j = 0; j < num_kv_tiles; ++j) {
    const int stage = j % kWideStages;
    const int next = j + kWideStages - 1;  // its stage was last read in iteration j - 1 (ended by a barrier)
    if (next < num_kv_tiles)
      kv.issue(next * kWN, ctx, sk0 + (next % kWideStages) * kStageBytes, sv0 + (next % kWideStages) * kStageBytes);
    cp_async_commit();
    if (next + 1 < num_kv_tiles) kv.fetch_blocks((next + 1) * kWN, ctx);
    // This thread's copies of tile j have landed: at j = 0 with those of Q and the step's rows (the
    // group before this iteration's), later with the kWideStages - 1 tiles issued after it pending.
    // Then everyone's.
    if (j == 0) cp_async_wait<1>();
    else cp_async_wait<kWideStages - 1>();
    kv.convert(sk0 + stage * kStageBytes, sv0 + stage * kStageBytes);
    __syncthreads();
    if constexpr (kQInRegs) {
      if (j == 0 && warp_active) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) load_q_fragments<HD>(qa[mt], sq, warp_row0 + mt * 16, lane);
      }
    }
    const int kv_base = j * kWN;
    // A tile entirely past the warp's last horizon is fully masked for all its rows: skipping it
    // is exactly a no-op (alpha = 1, p = 0), so the result does not depend on the skip.
    if (warp_active && kv_base < warp_last_h) {
      float s[kMT][kS][4];
      qk_scores_mt<HD, kS, kMT, kQInRegs>(s, qa, sq, warp_row0, sk0 + stage * kStageBytes, lane);
      // Only the tiles that reach past the warp's first horizon (the diagonal's) need the mask.
      if (kv_base + kWN > warp_first_h) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int n = 0; n < kS; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (kv_base + n * 8 + 2 * tq + (e & 1) >= horizon[mt][e >> 1]) s[mt][n][e] = -INFINITY;
      }
      float alpha[kMT][2];
      bool max_moved = false;
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        online_softmax_step<kS>(s[mt], p.scale_log2, m_run[mt], l_run[mt], alpha[mt]);
        max_moved |= alpha[mt][0] != 1.0f || alpha[mt][1] != 1.0f;
      }
      // Once a row's maximum has settled its alpha is exactly 1, and O * 1 is O: the warp skips the
      // rescale (HD / 2 multiplies per thread) on the tiles where none of its rows' maxima moved.
      if (__any_sync(kFullMask, max_moved)) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) rescale_rows<HD>(o[mt], alpha[mt]);
      }
      pv_accumulate_mt<HD, kS, kMT>(o, s, sv0 + stage * kStageBytes, lane);
    }
    __syncthreads();
  }
  cp_async_wait<0>();
  __syncthreads();  // every copy into the Q tile has landed and every read of it is done before it holds O

  if (!warp_active) return;
  // Stage this warp's rows of O as bf16 in its own rows of the Q tile (only this warp read them).
  unsigned char* sq_bytes = smem;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[mt][r];
      l += __shfl_xor_sync(kFullMask, l, 1);
      l += __shfl_xor_sync(kFullMask, l, 2);
      inv[r] = l > 0.0f ? 1.0f / l : 0.0f;  // no visible key (invalid seq_lens): zeros
      if constexpr (kFp8) inv[r] *= p.v_scale;
    }
    const int row = warp_row0 + mt * 16 + g;
#pragma unroll
    for (int d = 0; d < HD / 8; ++d) {
      *reinterpret_cast<uint32_t*>(sq_bytes + swizzle<HD>(row, d) + tq * 4) =
          pack_bf16(o[mt][d][0] * inv[0], o[mt][d][1] * inv[0]);
      *reinterpret_cast<uint32_t*>(sq_bytes + swizzle<HD>(row + 8, d) + tq * 4) =
          pack_bf16(o[mt][d][2] * inv[1], o[mt][d][3] * inv[1]);
    }
  }
  __syncwarp();
  __nv_bfloat16* out = static_cast<__nv_bfloat16*>(p.out);
#pragma unroll
  for (int i = 0; i < kWarpRows * kChunks / 32; ++i) {
    const int idx = lane + 32 * i;
    const int row = warp_row0 + idx / kChunks, chunk = idx % kChunks;
    if (row >= valid_rows) continue;
    const int m = m0 + row;
    const int token = q_begin + m / group;
    if (token < 0 || token >= p.num_tokens) continue;
    const int head = kv_head * group + m % group;
    *reinterpret_cast<uint4*>(out + (static_cast<int64_t>(token) * p.num_heads + head) * HD + chunk * 8) =
        *reinterpret_cast<const uint4*>(sq_bytes + swizzle<HD>(row, chunk));
  }
}

template <int HD, bool kFp8>
__global__ void __launch_bounds__(kFlashThreads, 2) flash_attention_kernel(const FlashParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  // PDL: the next kernel may launch now. What this grid reads of the previous kernel's work (RoPE
  // and the cache write) is Q and this step's own KV rows; the step's metadata was copied before
  // the chain's first kernel started, and every other KV row by an earlier step. So the tile's
  // owner, its block ids and its first KV tiles' earlier rows are requested before the wait and
  // stream while that kernel drains; Q and the step's rows follow it. Every CTA waits before it
  // exits, so that its completion implies the previous grid's.
  fg::cuda::allow_dependent_grids();

  const int group = p.num_heads / p.num_kv_heads;
  const int kv_head = blockIdx.y;
  TileAssignment a;
  if (!locate_tile(p.query_start_loc, p.num_reqs, group, static_cast<int>(blockIdx.x), a)) {
    fg::cuda::wait_for_prerequisite_grids();
    return;
  }

  const int req = a.req;
  const int q_begin = p.query_start_loc[req];
  const int num_query = p.query_start_loc[req + 1] - q_begin;
  const int rows = num_query * group;
  // Latest query tile first: it has the longest KV walk, and CTAs start roughly in index order.
  const int tile = a.count - 1 - (static_cast<int>(blockIdx.x) - a.start);
  const int m0 = tile * kBM;
  const int valid_rows = min(kBM, rows - m0);
  const int ctx = min(p.seq_lens[req], p.max_blocks * p.block_size);  // never past the table row
  const int before = ctx - num_query;  // context positions before this step's chunk
  // Packed row m is token m / group of the chunk and sees positions [0, before + m / group].
  const int last_h = before + (m0 + valid_rows - 1) / group + 1;
  const TileWalk t{req, q_begin, m0, valid_rows, group, kv_head, before, last_h, ctx};

  if (valid_rows > kShortRows) {
    walk_wide_tile<HD, kFp8>(p, t, smem);
    return;
  }
  walk_short_tile<HD, kFp8>(p, t, smem);
}

template <int HD>
void launch(const FlashParams& p, cudaStream_t stream) {
  const int group = p.num_heads / p.num_kv_heads;
  const int64_t tiles = (static_cast<int64_t>(p.num_tokens) * group + kBM - 1) / kBM + p.num_reqs;
  if (tiles == 0) return;  // an empty step (a shape, so the same decision eager and captured)
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(p.num_kv_heads));
  if (p.kv_fp8)
    fg::cuda::launch_with_pdl(flash_attention_kernel<HD, true>, grid, dim3(kFlashThreads), flash_smem_bytes(HD), stream,
                              p);
  else
    fg::cuda::launch_with_pdl(flash_attention_kernel<HD, false>, grid, dim3(kFlashThreads), flash_smem_bytes(HD),
                              stream, p);
}

template <int HD>
void prepare_head_dim() {
  for (const void* kernel : {reinterpret_cast<const void*>(flash_attention_kernel<HD, false>),
                             reinterpret_cast<const void*>(flash_attention_kernel<HD, true>)})
    FG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, flash_smem_bytes(HD)));
}

}  // namespace

void flash_attention_prepare() {
  prepare_head_dim<64>();
  prepare_head_dim<128>();
}

void launch_flash_attention(const FlashParams& params, cudaStream_t stream) {
  switch (params.head_dim) {
    case 64: launch<64>(params, stream); break;
    case 128: launch<128>(params, stream); break;
    default: FG_CUDA_CHECK(cudaErrorInvalidValue);  // refused at construction; never reached from the backend
  }
}

}  // namespace fg::attn
