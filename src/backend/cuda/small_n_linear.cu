// backend/cuda/small_n_linear.cu — the decode-time linear (n <= 16 token rows) on tensor cores,
// and the fp32 bias add used after cuBLASLt.
//
// Why tensor cores for a memory-bound kernel: at n = 16 each weight element meets 16 token
// values, and fp32 FMAs on the CUDA cores would need about the whole SM's FMA rate to keep up
// with 4.3 TB/s of weights; mma.sync does the same work in a few instructions per 512 bytes.
//
// Layout. A block owns a tile of 8 weight rows (the n8 side of mma.m16n8k16; two tiles at n > 8,
// see tiles_per_block) and all n token rows (the m16 side; rows >= n are fed as zeros). Lane (g = lane / 4, t = lane % 4) loads 16 bytes of
// weight row g and of token rows g and g + 8 at k = 32 s + 8 t for each k-step s. A dot product
// does not care in which order k is visited as long as both operands agree, so those 8
// contiguous values serve as the fragment pairs (k 2t.., k 2t+8..) of two mma k16 steps: the
// weights stream with plain 16-byte loads and no shuffles or shared memory. The block's warps
// take groups of kUnroll consecutive k-steps round-robin, all loads of a group in flight at once,
// and their partial sums meet in shared memory, added in warp order. Where a block is a single
// warp (grids of several waves), the weights go through a per-lane cp.async ring in shared memory
// instead of registers, so that more groups stay in flight (see launch_small_n_linear).
//
// The residual stream: on the register path the kernel may normalize its token rows on the way in
// (input_norm.h: the q/k/v span after the layer's input norm), and any launch may add its outputs
// to the residual stream in its store (LinearOutputs::add_to_output: o_proj). The normed q/k/v
// span may also apply RoPE and write the KV cache in its store (qkv_rope.h).
//
// Graph == eager (DESIGN.md rule 7): the k order, the warp count and the final sum order depend
// on the weight's shape only, and the tensor core computes each output from its own row and
// column, so every n in 1..16 gives bit-identical rows.
#include "backend/cuda/bf16_vec.cuh"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/input_norm.h"
#include "backend/cuda/mma_bf16.cuh"
#include "core/cuda/pdl.cuh"
#include "backend/cuda/qkv_rope.h"
#include "backend/cuda/small_n_linear.h"
#include "backend/cuda/weight_loads.cuh"

#include <algorithm>
#include <type_traits>

namespace fg::cuda {

namespace {

constexpr int kRowsPerBlock = 8;  // weight rows per block
constexpr int kUnroll = 4;        // k-steps of 32 in flight per warp (64 bytes of weights per lane)
constexpr int kMaxWarps = 16;
constexpr int kRingStages = 4;    // groups per warp in the cp.async ring (3 in flight)

// Token rows are written by the previous kernel: a coherent load after the wait (pdl.cuh). (The
// norm weight, which no kernel writes, takes the same path: it is read beside the rows.)
__device__ __forceinline__ uint4 load_tokens(const bf16* p) { return load_written_16(p); }

// 16-byte asynchronous copy global -> shared that bypasses L1 (weights are read once).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending));
}

// kStages == 0: each warp loads a group of kGroup k-steps into registers and waits for it.
// kStages > 0: a per-lane ring of kStages groups in shared memory filled by cp.async, so that
// kStages - 1 groups stay in flight without holding registers (a lane reads back only what it
// copied itself: no barrier).
// Weight tiles of 8 rows per block: two when token rows 8..15 are present and the weights come
// through registers, so that each token fragment (two 16-byte loads per lane at n > 8) serves two
// tiles' mma rather than one. Each tile's sums keep their order (the same warps visit the same
// k-steps), so the rows' bits do not depend on it.
constexpr int tiles_per_block(bool upper_half, int stages) { return upper_half && stages == 0 ? 2 : 1; }

// kUpperHalf: token rows 8..15 are present (n > 8); without it their fragments are constant zeros.
// kNorm: the rows are normalized on the way in (input_norm.h): each token fragment becomes
// bf16(g ⊙ x) and adds to its row's sum of squares, and the sums are scaled by 1 / rms.
// kRope: the weight is a q/k/v span whose q and k rows are read in RoPE pairs and whose store
// rotates them and writes the cache (qkv_rope.h).
// Blocks per SM the registers must allow (64 registers per thread at 2): two-tile blocks may use up
// to 128 registers (their group of weights alone takes 32); so may the input norm, whose weight
// fragments and sums of squares spilled at 64.
constexpr int min_blocks(bool upper_half, int stages, bool norm) {
  return tiles_per_block(upper_half, stages) == 2 || norm ? 1 : 2;
}

// What the store of a kRope launch (qkv_rope.h) needs besides the sums, for lane (g, t) of a tile
// whose logical rows `row` (even) and row + 1 are a RoPE pair (in q or k) or two v columns: the
// cache slots of tokens g and g + 8 and, in q and k, the cosine and sine of the pair's frequency
// at their positions. None of it depends on an earlier kernel (the step's metadata, a constant
// table), so the kernel reads it before its PDL wait rather than after its main loop.
struct RopeLane {
  float cos[2], sin[2];
  int64_t slot[2];
};

__device__ __forceinline__ RopeLane load_rope_lane(const LinearOutputs& out, const QkvRope& rope, int n,
                                                   int out_features, int row, int g) {
  RopeLane lane{};
  const int v_begin = static_cast<int>(out.begin[2]);
  const bool rotated = row < v_begin && row < out_features;
  const int e = rotated ? qkv_weight_row(row, v_begin, rope.head_dim) % rope.head_dim : 0;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int token = g + r * 8;
    lane.slot[r] = token < n ? rope.slot_mapping[token] : -1;
    if (token >= n || !rotated) continue;
    const float* cos_row = rope_angles(rope, token);
    lane.cos[r] = cos_row[e];
    lane.sin[r] = cos_row[rope.head_dim / 2 + e];
  }
  return lane;
}

// The store of a kRope launch for that lane: sums[0], sums[1] are token g's at logical rows `row`
// and row + 1, sums[2], sums[3] token g + 8's. In q and k those rows are a RoPE pair, stored at
// their true columns; in v two neighbouring columns (store_qkv_pair). The bias (at the rows' weight
// rows) is added before the rounding, as in the plain store.
__device__ __forceinline__ void store_qkv_rope(const LinearOutputs& out, const QkvRope& rope, const RopeLane& lane,
                                               const bf16* bias, int n, int out_features, int row, int g,
                                               const float (&sums)[4]) {
  if (row >= out_features) return;  // out_features is even: a pair is all in or all out
  const int v_begin = static_cast<int>(out.begin[2]);
  const int column = row < v_begin ? qkv_weight_row(row, v_begin, rope.head_dim) : row;
  const int partner = row < v_begin ? column + rope.head_dim / 2 : row + 1;  // where the second sum goes
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int token = g + r * 8;
    if (token >= n) continue;
    float first = sums[2 * r], second = sums[2 * r + 1];
    if (bias != nullptr) {
      first += __bfloat162float(bias[column]);
      second += __bfloat162float(bias[partner]);
    }
    store_qkv_pair(out, rope, token, column, partner, first, second, lane.cos[r], lane.sin[r], lane.slot[r]);
  }
}

// The register cap: 128 (what min_blocks allows at one block per SM) except for kRope at n <= 8,
// which the compiler took to 90 registers where the plain normed kernel takes 80. At 90 the fused
// launch took 10.4 us of the 1B decode step against 6.2 for the plain one, and still did with
// its RoPE work, row order and cache writes all switched off; capped at 80 (no spills) it took
// 6.1-6.6 us (bench/RESULTS.md, 2026-12-01). Why was not measured on this kernel.
// The likely mechanism, which the phase probe shows (bench/probes/phase_boundaries.cu,
// 2026-12-01): under PDL a launch's registers decide how many of the next launch's blocks start
// beside its own; the probe's launch boundaries cost 3.6 us at 33 registers, 6.4 at 48.
constexpr int max_registers(bool upper_half, bool rope) { return rope && !upper_half ? 80 : 128; }

template <bool kUpperHalf, int kStages, int kGroup, typename OutT, bool kNorm, bool kRope>
__global__ void __launch_bounds__(kMaxWarps * 32, min_blocks(kUpperHalf, kStages, kNorm))
    __maxnreg__(max_registers(kUpperHalf, kRope))
    small_n_linear_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ bias,
                          const LinearOutputs out, int n, int in, int out_features, const InputNorm norm,
                          const QkvRope rope) {
  constexpr int kTiles = tiles_per_block(kUpperHalf, kStages);
  static_assert(!kNorm || kStages == 0, "the input norm rides on the register path");
  static_assert(!kRope || (kStages == 0 && std::is_same_v<OutT, bf16>), "RoPE rides on the register path, in BF16");
  __shared__ float partial[kMaxWarps][kTiles][4][32];  // [warp][tile][accumulator][lane]
  __shared__ float row_sum_sq[kNorm ? kMaxWarps : 1][16];  // [warp][token row]
  extern __shared__ uint4 ring[];                      // [warp][stage][kGroup][lane] when kStages > 0
  allow_dependent_grids();  // see the PDL note at the main loop
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * kRowsPerBlock * kTiles;

  // Rows past the end (a last, partial block) read the last row; their results are dropped. Token
  // rows past n read row 0 (the same addresses as lanes that need it: no extra traffic) and are
  // zeroed after the load, so that no load waits on a predicate.
  // kRope: logical row r is weight row qkv_weight_row(r) (the q and k rows in RoPE pairs).
  const int rotated = kRope ? static_cast<int>(out.begin[2]) : 0;  // the q and k rows
  auto weight_row = [&](int row) -> int64_t { return kRope ? qkv_weight_row(row, rotated, rope.head_dim) : row; };
  const bf16* w_lane[kTiles];
#pragma unroll
  for (int j = 0; j < kTiles; ++j)
    w_lane[j] = w + weight_row(min(row0 + j * kRowsPerBlock + g, out_features - 1)) * in + t * 8;
  const bool has_lo = g < n, has_hi = kUpperHalf && g + 8 < n;
  const bf16* x_lo = x + static_cast<int64_t>(has_lo ? g : 0) * in + t * 8;
  const bf16* x_hi = x + static_cast<int64_t>(has_hi ? g + 8 : 0) * in + t * 8;
  const bf16* g_lane = norm.weight + t * 8;  // kNorm: the norm weight at this lane's k
  float sum_sq_lo = 0.0f, sum_sq_hi = 0.0f;  // kNorm: rows g and g + 8 over this lane's k
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // kNorm: a token fragment at k on its way to the tensor cores.
  auto normalize = [&](int k, uint4& lo, uint4& hi) {
    if constexpr (kNorm) {
      const uint4 gv = load_tokens(g_lane + k);
      lo = apply_norm_weight(lo, gv, sum_sq_lo);
      if (kUpperHalf) hi = apply_norm_weight(hi, gv, sum_sq_hi);
    }
  };

  // kRope: what warp j's store of tile j needs (see the end), read just before the PDL wait, after
  // the first weights are requested: it is a chain of two loads.
  RopeLane rope_lane{};
  auto read_rope_lane = [&] {
    if constexpr (kRope)
      if (warp < kTiles) rope_lane = load_rope_lane(out, rope, n, out_features, row0 + warp * kRowsPerBlock + 2 * t, g);
  };
  float acc[kTiles][4] = {};
  // One k-step: wv[j] holds tile j's weights (wv[1] is unused with one tile).
  auto step = [&](const uint4 (&wv)[2], uint4 lo, uint4 hi) {
    if (!has_lo) lo = zero;
    if (!has_hi) hi = zero;
#pragma unroll
    for (int j = 0; j < kTiles; ++j) mma_k32_slice(acc[j], lo, hi, wv[j]);
  };
  auto compute_group = [&](int k, const uint4 (&wv)[kGroup][2]) {
    uint4 lo[kGroup], hi[kGroup];
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      lo[u] = load_tokens(x_lo + k + u * 32);
      hi[u] = kUpperHalf ? load_tokens(x_hi + k + u * 32) : zero;
    }
#pragma unroll
    for (int u = 0; u < kGroup; ++u) normalize(k + u * 32, lo[u], hi[u]);
#pragma unroll
    for (int u = 0; u < kGroup; ++u) step(wv[u], lo[u], hi[u]);
  };
  auto load_group = [&](int k, uint4 (&wv)[kGroup][2]) {
#pragma unroll
    for (int u = 0; u < kGroup; ++u)
#pragma unroll
      for (int j = 0; j < kTiles; ++j) wv[u][j] = load_weights(w_lane[j] + k + u * 32);
  };
  // The lines of a group's weights in L2: a row's k-steps u and u + 1 share one 128-byte line (at
  // in % 64 == 0), which the quad's lane t = 0 asks for.
  auto prefetch_group = [&](int k) {
    if (t != 0) return;
#pragma unroll
    for (int u = 0; u < kGroup; u += 2)
#pragma unroll
      for (int j = 0; j < kTiles; ++j) prefetch_l2(w_lane[j] + k + u * 32);
  };

  // Main loop: groups of kGroup consecutive whole k-steps, dealt to the warps round-robin.
  // PDL (the kernel is launched with it): the weights depend on no earlier kernel, so each warp
  // requests its first group of them before waiting for the kernel that writes the tokens, and
  // asks L2 for the lines of its later groups; they stream while that kernel drains (attention
  // before o_proj reads little of HBM). Tokens and outputs are touched only after the wait.
  const int full_steps = in / 32, steps = (in + 31) / 32, groups = full_steps / kGroup;
  if constexpr (kStages == 0) {
    int first = warp;
    if (first < groups) {
      const int k = first * kGroup * 32;
      uint4 wv[kGroup][2];
      load_group(k, wv);
      for (int later = first + warps; later < groups; later += warps) prefetch_group(later * kGroup * 32);
      read_rope_lane();
      wait_for_prerequisite_grids();
      compute_group(k, wv);
      first += warps;
    } else {
      read_rope_lane();
      wait_for_prerequisite_grids();
    }
    for (int group = first; group < groups; group += warps) {
      const int k = group * kGroup * 32;
      uint4 wv[kGroup][2];
      load_group(k, wv);
      compute_group(k, wv);
    }
  } else {
    uint4* my_ring = ring + warp * kStages * kGroup * 32 + lane;  // slot (stage, u) at [(stage * kGroup + u) * 32]
    static_assert(kTiles == 1, "the ring holds one tile's weights");
    auto issue = [&](int group, int stage) {
      if (group < groups) {
#pragma unroll
        for (int u = 0; u < kGroup; ++u)
          cp_async_16(my_ring + (stage * kGroup + u) * 32, w_lane[0] + group * kGroup * 32 + u * 32);
      }
      cp_async_commit();  // empty groups too, so that the wait count below stays exact
    };
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) issue(warp + s * warps, s);
    wait_for_prerequisite_grids();
    int stage = 0;
    for (int group = warp; group < groups; group += warps) {
      issue(group + (kStages - 1) * warps, (stage + kStages - 1) % kStages);
      cp_async_wait<kStages - 1>();
      uint4 wv[kGroup][2];
#pragma unroll
      for (int u = 0; u < kGroup; ++u) wv[u][0] = my_ring[(stage * kGroup + u) * 32];
      compute_group(group * kGroup * 32, wv);
      stage = (stage + 1) % kStages;
    }
    cp_async_wait<0>();
  }
  // The k-steps left over (fewer than kGroup, the last maybe partial when in % 32 != 0), one per
  // warp in turn; a lane's 8 values are all in or all out since in % 8 == 0.
  for (int s = groups * kGroup + warp; s < steps; s += warps) {
    const int k = s * 32;
    const bool in_range = k + t * 8 < in;
    uint4 wv[2];
#pragma unroll
    for (int j = 0; j < kTiles; ++j) wv[j] = in_range ? load_weights(w_lane[j] + k) : zero;
    uint4 lo = in_range ? load_tokens(x_lo + k) : zero, hi = kUpperHalf && in_range ? load_tokens(x_hi + k) : zero;
    if (in_range) normalize(k, lo, hi);
    step(wv, lo, hi);
  }
  if constexpr (kNorm) store_warp_row_sums(sum_sq_lo, sum_sq_hi, row_sum_sq[warp], g, t);

#pragma unroll
  for (int j = 0; j < kTiles; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[warp][j][i][lane] = acc[j][i];
  __syncthreads();
  // Warp j sums tile j, over the warps in warp order.
  for (int tile = warp; tile < kTiles; tile += warps) {
    float row_scale[2] = {1.0f, 1.0f};  // kNorm: 1 / rms of token rows g and g + 8
    if constexpr (kNorm) row_scales(row_sum_sq, warps, g, in, norm.eps, row_scale);
    float sums[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sums[i] = partial[0][tile][i][lane];
      for (int other = 1; other < warps; ++other) sums[i] += partial[other][tile][i][lane];
      if constexpr (kNorm) sums[i] *= row_scale[i >> 1];
    }
    if constexpr (kRope) {
      store_qkv_rope(out, rope, rope_lane, bias, n, out_features, row0 + tile * kRowsPerBlock + 2 * t, g, sums);
    } else {
      // Accumulators 2r and 2r + 1 of lane (g, t): token row g + 8 r, weight rows 2t and 2t + 1, stored
      // as one pair where the outputs allow it (LinearOutputs::pairs_fit).
      const int row = row0 + tile * kRowsPerBlock + 2 * t;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int token = g + r * 8;
        if (token >= n || row >= out_features) continue;
        float value[2] = {sums[2 * r], sums[2 * r + 1]};
        if (bias != nullptr) {
          value[0] += __bfloat162float(bias[row]);
          if (row + 1 < out_features) value[1] += __bfloat162float(bias[row + 1]);
        }
        out.put_neighbours<OutT>(token, row, out_features, value[0], value[1], out.pairs_fit());
      }
    }
  }
}

template <bool kUpperHalf, int kStages, int kGroup, typename OutT, bool kNorm = false, bool kRope = false>
void launch_typed(const bf16* x, const bf16* w, const bf16* bias, const LinearOutputs& out, int64_t n, int64_t in,
                  int64_t out_features, int warps, cudaStream_t stream, const InputNorm& norm = {},
                  const QkvRope& rope = {}) {
  const int64_t block_rows = kRowsPerBlock * tiles_per_block(kUpperHalf, kStages);
  const int64_t blocks = (out_features + block_rows - 1) / block_rows;
  const int ring_bytes = warps * kStages * kGroup * 32 * static_cast<int>(sizeof(uint4));
  auto* kernel = small_n_linear_kernel<kUpperHalf, kStages, kGroup, OutT, kNorm, kRope>;
  if (ring_bytes > 48 * 1024)
    FG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ring_bytes));
  launch_with_pdl(kernel, dim3(static_cast<unsigned>(blocks)), dim3(warps * 32), static_cast<size_t>(ring_bytes), stream,
                  x, w, bias, out, static_cast<int>(n), static_cast<int>(in),
                  static_cast<int>(out_features), norm, rope);
}

template <int kStages, int kGroup>
void launch_pipeline(const bf16* x, const bf16* w, const bf16* bias, const LinearOutputs& out, bool out_f32,
                     int64_t n, int64_t in, int64_t out_features, int warps, cudaStream_t stream) {
  // The two instantiations per output type differ only in which token fragments can be non-zero.
  if (n > 8) {
    if (out_f32) launch_typed<true, kStages, kGroup, float>(x, w, bias, out, n, in, out_features, warps, stream);
    else launch_typed<true, kStages, kGroup, bf16>(x, w, bias, out, n, in, out_features, warps, stream);
  } else {
    if (out_f32) launch_typed<false, kStages, kGroup, float>(x, w, bias, out, n, in, out_features, warps, stream);
    else launch_typed<false, kStages, kGroup, bf16>(x, w, bias, out, n, in, out_features, warps, stream);
  }
}

__global__ void __launch_bounds__(256) add_bias_f32_kernel(float* __restrict__ out, const bf16* __restrict__ bias,
                                                           int64_t total, int64_t out_features) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] += __bfloat162float(bias[i % out_features]);
}

}  // namespace

int small_n_linear_warps(int64_t out_features, int sm_count) {
  // About 32 resident warps per SM at <= 64 registers per thread: grow the block while the
  // whole grid still fits in one wave.
  const int64_t blocks = (out_features + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t resident_warps = static_cast<int64_t>(sm_count) * 32;
  int warps = 1;
  while (warps < kMaxWarps && blocks * warps * 2 <= resident_warps) warps *= 2;
  return warps;
}

void launch_small_n_linear(const bf16* x, const bf16* w, const bf16* bias, const LinearOutputs& out, bool out_f32,
                           int64_t n, int64_t in, int64_t out_features, int warps, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  // One-warp blocks (grids of several waves, e.g. an LM head) hit the limit of resident blocks
  // per SM before the register file: there the cp.async ring keeps 3 groups per warp in flight
  // without registers (+20-50% on the LM heads, bench/RESULTS.md). Elsewhere it loses to plain
  // loads, which leave more warps resident. Both visit k in the same order, so the choice (a
  // function of the shape) changes no bit of the result.
  if (warps == 1) launch_pipeline<kRingStages, kUnroll>(x, w, bias, out, out_f32, n, in, out_features, warps, stream);
  else launch_pipeline<0, kUnroll>(x, w, bias, out, out_f32, n, in, out_features, warps, stream);
}

bool small_n_linear_takes_norm(int64_t out_features, int sm_count) {
  return small_n_linear_warps(out_features, sm_count) > 1;  // the register path
}

void launch_small_n_linear_normed(const bf16* x, const InputNorm& norm, const bf16* w, const bf16* bias,
                                  const LinearOutputs& out, int64_t n, int64_t in, int64_t out_features, int warps,
                                  cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  if (warps <= 1 || !norm.enabled()) FG_CUDA_CHECK(cudaErrorInvalidValue);  // the caller checks small_n_linear_takes_norm
  if (n > 8) launch_typed<true, 0, kUnroll, bf16, true>(x, w, bias, out, n, in, out_features, warps, stream, norm);
  else launch_typed<false, 0, kUnroll, bf16, true>(x, w, bias, out, n, in, out_features, warps, stream, norm);
}

void launch_small_n_qkv_rope(const bf16* x, const InputNorm& norm, const bf16* w, const bf16* bias,
                             const LinearOutputs& out, const QkvRope& rope, int64_t n, int64_t in,
                             int64_t out_features, int warps, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  // The caller checks small_n_linear_takes_norm and the layout: three parts, q and k whole heads.
  if (warps <= 1 || !norm.enabled() || out.parts != 3 || rope.head_dim % 16 != 0 || out.begin[2] % rope.head_dim != 0)
    FG_CUDA_CHECK(cudaErrorInvalidValue);
  if (n > 8)
    launch_typed<true, 0, kUnroll, bf16, true, true>(x, w, bias, out, n, in, out_features, warps, stream, norm, rope);
  else
    launch_typed<false, 0, kUnroll, bf16, true, true>(x, w, bias, out, n, in, out_features, warps, stream, norm, rope);
}

void launch_add_bias_f32(float* out, const bf16* bias, int64_t n, int64_t out_features, cudaStream_t stream) {
  const int64_t total = n * out_features;
  if (total == 0) return;
  const int64_t blocks = std::min<int64_t>((total + 255) / 256, 65536);
  add_bias_f32_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(out, bias, total, out_features);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::cuda
