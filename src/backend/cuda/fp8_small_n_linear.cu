// backend/cuda/fp8_small_n_linear.cu — the decode-time linear (n <= 16 token rows) over e4m3
// weights with a scale per output channel and e4m3 token rows with a scale per row.
//
// Arithmetic (mma_e4m3.cuh): e4m3 operands converted to f16 (the weights by cvt.rn.f16x2.e4m3x2,
// the tokens by integer ops: e4m3x2_to_f16x2_alu), mma.sync m16n8k16 with fp32 accumulators: exact
// products, fp32 sums. The scales are applied once per output, after
// the sum: acc * x_scale * w_scale, then the bias, each step rounded in fp32 (__fmul_rn /
// __fadd_rn: no contraction into an fma), then one rounding to bf16.
//
// Layout. A block owns 16 weight rows (the m16 side of the mma) and all n token rows (the n8 side:
// one n8 tile, or two when n > 8). Lane (g = lane / 4, t = lane % 4) loads 16 contiguous bytes at
// k = 64 s + 16 t of weight rows g and g + 8 and of token rows g (and g + 8) for each k-step s
// of 64. A dot product does not care which k lands in which mma slot as long as both operands
// agree: 32-bit word i of a lane's 16 bytes (k 16 t + 4 i ..+3) fills the slots (2t, 2t+1) and
// (2t+8, 2t+9) of the i-th mma of the step, for the weights (A) and the tokens (B) alike, so the
// operands stream with plain 16-byte loads and no shuffles or shared memory.
//
// Work split: the block's warps take groups of kUnroll consecutive k-steps round-robin, all 2 *
// kUnroll weight loads of a group in flight at once, double buffered: a warp computes one group
// while its next is loading, so a warp with two groups (the 16-32 MB weights of an 8B model) has
// both in flight from the start. Each warp asks L2 for the lines of the group kPrefetchGroups past
// the one it loads. The weights depend on no earlier kernel (PDL): each warp requests its first
// two groups before waiting for the kernel that writes the tokens.
// The steps left over (fewer than a group, the last maybe partial when in % 64 != 0) go one per
// warp in turn. The warps' partial sums meet in shared memory and are added in warp order.
//
// Graph == eager (DESIGN.md rule 7): the warp count is a function of (out_features, in, sm_count),
// the k order of every accumulator follows from it and from `in`, and the tensor core computes
// each output from its own weight row and token row; the second n8 tile (n > 8) has accumulators
// of its own. So row i's bits are the same for every n in 1..16.
#include <cuda_bf16.h>

#include <algorithm>
#include <type_traits>

#include "backend/cuda/fp8_kernels.h"
#include "backend/cuda/fp8_row_sources.cuh"
#include "backend/cuda/mma_e4m3.cuh"
#include "backend/cuda/weight_loads.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/pdl.cuh"

namespace fg::cuda {

namespace {

constexpr int kTileRows = 16;       // weight rows per block: the m16 side
constexpr int kStepK = 64;          // k per warp step: 4 lanes x 16 bytes per row
constexpr int kUnroll = 4;          // k-steps per group: 8 weight loads (128 bytes) in flight per lane
constexpr int kPrefetchGroups = 2;  // how far ahead (in the warp's own groups) L2 is asked for weights
constexpr int kMaxWarps = 16;
constexpr int kWarpsPerSm = 16;     // the resident warps the grid aims for (<= 128 registers each)

// Token rows a quantizer kernel rounded to e4m3 (fp8_quant_kernels.cu), in global memory.
struct E4m3Tokens {
  const uint8_t* values;  // [n, in]
  const float* scales;    // [n]
};

// Token rows the block rounds to e4m3 itself, from bf16 rows (Bf16Rows) or SiLU-and-multiply's
// inputs (SiluMulRows), into shared memory: the quantizer kernel's arithmetic (fp8_row_sources.cuh),
// so the same bits, without its launch.
template <typename Source>
struct QuantizedHereTokens {
  Source src;
  float static_scale;  // > 0: the rows' scale; else a scale per row from its max
};

template <typename Tokens>
constexpr bool kQuantizesHere = !std::is_same_v<Tokens, E4m3Tokens>;

// Shared-memory rows are kRowPad bytes longer than a row, so that the two rows a quarter warp
// reads (lanes g = 0, 1) fall in different banks.
constexpr int kRowPad = static_cast<int>(kFp8QuantizeHereRowPad);
constexpr int kMaxQuantizedRows = static_cast<int>(kFp8QuantizeHereMaxRows);

// Token rows are written by the previous kernel: from global memory a coherent load after the wait
// (pdl.cuh); from shared memory the block's own rows.
template <bool kShared>
__device__ __forceinline__ uint4 load_tokens(const uint8_t* p) {
  if constexpr (kShared) return *reinterpret_cast<const uint4*>(p);
  else return load_written_16(p);
}

// The max of `m` over the warp lanes whose `row` is the same, folded into row_max[row] (the bits
// of a non-negative float, which order as the values do). A warp's items are consecutive chunks, so
// they share a row but where they cross into the next.
__device__ __forceinline__ void fold_row_max(float m, int row, unsigned* row_max) {
  const int lane = threadIdx.x & 31;
  const int row0 = __shfl_sync(0xffffffffu, row, 0);
  if (__all_sync(0xffffffffu, row == row0)) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    if (lane == 0 && row0 >= 0) atomicMax(row_max + row0, __float_as_uint(m));
  } else if (row >= 0) {
    atomicMax(row_max + row, __float_as_uint(m));
  }
}

// Rounds the n token rows [n, in] of `tokens` to e4m3 into shared `rows` (row r at r * stride) with
// their scales in `scales`, as launch_quantize_fp8_rows would: each thread takes chunks of 16
// values, a row's max meets in row_max (a max is exact in any order), then each chunk is loaded
// again (from L1) and rounded with its row's scale. Ends with the rows visible to the block.
template <typename Source>
__device__ void quantize_rows_here(const QuantizedHereTokens<Source>& tokens, int n, int in, uint8_t* rows,
                                   int stride, float* scales, unsigned* row_max) {
  const int chunks = in / 16, items = n * chunks, threads = blockDim.x, lane = threadIdx.x & 31;
  const bool dynamic = !(tokens.static_scale > 0.0f);
  if (dynamic) {
    if (threadIdx.x < n) row_max[threadIdx.x] = 0u;
    __syncthreads();
    // A warp-uniform trip count (fold_row_max shuffles across the warp). Each thread's kBatch
    // chunks are all loaded before any is used; a chunk past the rows loads the last one again
    // (so that no load waits on a predicate) and counts for no row.
    constexpr int kBatch = Source::kBatch;
    for (int base = threadIdx.x - lane; base < items; base += kBatch * threads) {
      typename Source::Raw raw[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int item = min(base + lane + b * threads, items - 1), r = item / chunks;
        raw[b] = tokens.src.fetch(r, item - r * chunks, in);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int item = base + lane + b * threads;
        float v[16], m = 0.0f;
        Source::values(raw[b], v);
#pragma unroll
        for (int e = 0; e < 16; ++e) m = fmaxf(m, fabsf(v[e]));
        fold_row_max(m, item < items ? item / chunks : -1, row_max);
      }
    }
    __syncthreads();
  }
  for (int item = threadIdx.x; item < items; item += threads) {
    const int r = item / chunks, c = item - r * chunks;
    const float s = row_scale(dynamic ? __uint_as_float(row_max[r]) : 0.0f, tokens.static_scale);
    float v[16];
    tokens.src.load(r, c, in, v);
    *reinterpret_cast<uint4*>(rows + r * stride + 16 * c) = quantize16(v, s);
  }
  if (threadIdx.x < n)
    scales[threadIdx.x] = row_scale(dynamic ? __uint_as_float(row_max[threadIdx.x]) : 0.0f, tokens.static_scale);
  __syncthreads();
}

// One k-step of 64 for one n8 tile: weight rows g (lo) and g + 8 (hi), token fragment x. Word i
// of each is the i-th mma's: its low two bytes the slots (2t, 2t+1), its high two (2t+8, 2t+9).
// The weight conversions are shared by both tiles when the caller passes the same words.
__device__ __forceinline__ void mma_step(float (&c)[4], const uint32_t (&a)[4][4], const uint4& x) {
  const uint32_t xw[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
    mma_f16_16x8x16(c, a[i][0], a[i][1], a[i][2], a[i][3], e4m3x2_to_f16x2_alu<0x1404>(xw[i]),
                    e4m3x2_to_f16x2_alu<0x3424>(xw[i]));
}

// kTiles: n8 tiles of token rows, 2 when n > 8. Tokens: E4m3Tokens, or QuantizedHereTokens (n <=
// 8). Dynamic shared memory: partial, [warp][tile][accumulator][lane] fp32 (before the main loop
// also the rows' maxes), then for QuantizedHereTokens the rows' scales (kMaxQuantizedRows fp32) and
// the rounded rows (n x (in + kRowPad) bytes).
template <int kTiles, typename Tokens>
__global__ void __launch_bounds__(kMaxWarps * 32, 1)
    fp8_small_n_linear_kernel(const Tokens tokens, const uint8_t* __restrict__ w, const float* __restrict__ w_scales,
                              const __nv_bfloat16* __restrict__ bias, const LinearOutputs out, int n, int in,
                              int out_features) {
  constexpr bool kShared = kQuantizesHere<Tokens>;
  extern __shared__ float partial[];
  allow_dependent_grids();  // the next kernel may start fetching what it does not wait for
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * kTileRows;

  // Weight rows past the end (a last, partial block) read the last row; their outputs are not
  // stored, and no other output depends on them.
  const uint8_t* w_lo = w + static_cast<int64_t>(min(row0 + g, out_features - 1)) * in + t * 16;
  const uint8_t* w_hi = w + static_cast<int64_t>(min(row0 + g + 8, out_features - 1)) * in + t * 16;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  auto load_group = [&](int k, uint4 (&lo)[kUnroll], uint4 (&hi)[kUnroll]) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      lo[u] = load_weights(w_lo + k + u * kStepK);
      hi[u] = load_weights(w_hi + k + u * kStepK);
    }
  };
  // A group's weights are 2 x 256 contiguous bytes per row pair (g, g + 8): 4 lines of 128, one
  // per lane of the quad.
  auto prefetch_group = [&](int group, int groups) {
    if (group >= groups) return;
    const uint8_t* row = t < 2 ? w_lo : w_hi;
    prefetch_l2(row + group * kUnroll * kStepK + (t & 1) * 128 - t * 16);
  };

  const int full_steps = in / kStepK, steps = (in + kStepK - 1) / kStepK, groups = full_steps / kUnroll;
  // Two buffers of a group each: while a warp computes one group, its next is in flight. The first
  // two go out before the wait (the weights depend on no earlier kernel). The groups are still
  // computed in the order group, group + warps, ... so every accumulator's k order is unchanged.
  constexpr int kGroupK = kUnroll * kStepK;
  uint4 lo_a[kUnroll], hi_a[kUnroll], lo_b[kUnroll], hi_b[kUnroll];
  auto load_ahead = [&](int next, uint4 (&lo)[kUnroll], uint4 (&hi)[kUnroll]) {
    if (next >= groups) return;
    load_group(next * kGroupK, lo, hi);
    prefetch_group(next + kPrefetchGroups * warps, groups);
  };
  int group = warp;
  load_ahead(group, lo_a, hi_a);
  load_ahead(group + warps, lo_b, hi_b);
  wait_for_prerequisite_grids();

  // The token rows: e4m3 in global memory, or rounded here into shared memory. Token rows past n
  // read row 0 (addresses other lanes read anyway) and are zeroed after the load, so that no load
  // waits on a predicate.
  const uint8_t* x;
  const float* x_scales;
  int64_t x_stride = in;
  if constexpr (kShared) {
    const int partial_floats = warps * kTiles * 4 * 32;
    float* row_scales = partial + partial_floats;
    uint8_t* rows = reinterpret_cast<uint8_t*>(row_scales + kMaxQuantizedRows);
    x_stride = in + kRowPad;
    quantize_rows_here(tokens, n, in, rows, static_cast<int>(x_stride), row_scales,
                       reinterpret_cast<unsigned*>(partial));
    x = rows;
    x_scales = row_scales;
  } else {
    x = tokens.values;
    x_scales = tokens.scales;
  }
  bool has_x[kTiles];
  const uint8_t* x_lane[kTiles];
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    has_x[j] = g + 8 * j < n;
    x_lane[j] = x + (has_x[j] ? g + 8 * j : 0) * x_stride + t * 16;
  }

  float acc[kTiles][4] = {};
  auto step = [&](const uint4& lo, const uint4& hi, const uint4 (&xv)[kTiles]) {
    uint32_t a[4][4];
    e4m3_a_fragments<true>(lo, hi, a);  // weight rows g and g + 8
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      uint4 x_frag = xv[j];
      if (!has_x[j]) x_frag = zero;
      mma_step(acc[j], a, x_frag);
    }
  };
  // The token fragments of a group come in kUnroll / kTiles steps at a time: with two tiles, all of
  // them at once would not fit beside the two groups of weights in 128 registers.
  constexpr int kTokenSteps = kUnroll / kTiles;
  auto compute_group = [&](int k, const uint4 (&lo)[kUnroll], const uint4 (&hi)[kUnroll]) {
#pragma unroll
    for (int u0 = 0; u0 < kUnroll; u0 += kTokenSteps) {
      uint4 xv[kTokenSteps][kTiles];
#pragma unroll
      for (int u = 0; u < kTokenSteps; ++u)
#pragma unroll
        for (int j = 0; j < kTiles; ++j) xv[u][j] = load_tokens<kShared>(x_lane[j] + k + (u0 + u) * kStepK);
#pragma unroll
      for (int u = 0; u < kTokenSteps; ++u) step(lo[u0 + u], hi[u0 + u], xv[u]);
    }
  };
  for (; group < groups; group += 2 * warps) {
    compute_group(group * kGroupK, lo_a, hi_a);
    load_ahead(group + 2 * warps, lo_a, hi_a);
    if (group + warps >= groups) break;
    compute_group((group + warps) * kGroupK, lo_b, hi_b);
    load_ahead(group + 3 * warps, lo_b, hi_b);
  }
  // The leftover steps; a lane's 16 values are all in or all out since in % 16 == 0.
  for (int s = groups * kUnroll + warp; s < steps; s += warps) {
    const int k = s * kStepK;
    const bool in_range = k + t * 16 < in;
    uint4 lo = zero, hi = zero, xv[kTiles];
#pragma unroll
    for (int j = 0; j < kTiles; ++j) xv[j] = zero;
    if (in_range) {
      lo = load_weights(w_lo + k);
      hi = load_weights(w_hi + k);
#pragma unroll
      for (int j = 0; j < kTiles; ++j) xv[j] = load_tokens<kShared>(x_lane[j] + k);
    }
    step(lo, hi, xv);
  }

#pragma unroll
  for (int j = 0; j < kTiles; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[((warp * kTiles + j) * 4 + i) * 32 + lane] = acc[j][i];
  __syncthreads();

  // Output (token c, weight row r of the tile) is accumulator i = 2 (r / 8) + c % 2 of lane
  // 4 (r % 8) + (c % 8) / 2 in tile c / 8. Thread tau stores token tau / 8, rows 2 (tau % 8) and
  // + 1 (one pair: consecutive threads write consecutive columns), each summed over the warps
  // in warp order.
  const bool paired = out.pairs_fit();
  for (int tau = threadIdx.x; tau < kTiles * 8 * 8; tau += blockDim.x) {
    const int c = tau >> 3, r = 2 * (tau & 7);
    const int row = row0 + r;
    if (c >= n || row >= out_features) continue;
    const int tile = c >> 3, i = 2 * (r >> 3) + (c & 1);
    const int lane0 = 4 * (r & 7) + ((c & 7) >> 1), lane1 = lane0 + 4;  // rows r and r + 1
    float sum[2];
    sum[0] = partial[(tile * 4 + i) * 32 + lane0];
    sum[1] = partial[(tile * 4 + i) * 32 + lane1];
    for (int other = 1; other < warps; ++other) {
      sum[0] += partial[((other * kTiles + tile) * 4 + i) * 32 + lane0];
      sum[1] += partial[((other * kTiles + tile) * 4 + i) * 32 + lane1];
    }
    const float x_scale = x_scales[c];
    float value[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (row + e >= out_features) {
        value[e] = 0.0f;  // not stored
        continue;
      }
      value[e] = __fmul_rn(__fmul_rn(sum[e], x_scale), w_scales[row + e]);
      if (bias != nullptr) value[e] = __fadd_rn(value[e], __bfloat162float(bias[row + e]));
    }
    out.put_neighbours<__nv_bfloat16>(c, row, out_features, value[0], value[1], paired);
  }
}

// Warps per block: as many as keep the grid within about kWarpsPerSm resident warps per SM (one
// wave), and no more than the groups of k-steps a row has to share out.
int fp8_linear_warps(int64_t out_features, int64_t in, int sm_count) {
  const int64_t blocks = (out_features + kTileRows - 1) / kTileRows;
  const int64_t groups = in / kStepK / kUnroll;
  const int64_t resident = static_cast<int64_t>(std::max(sm_count, 1)) * kWarpsPerSm;
  int warps = 1;
  while (warps < kMaxWarps && blocks * warps * 2 <= resident && warps * 2 <= groups) warps *= 2;
  return warps;
}

template <int kTiles, typename Tokens>
void launch_tiles(const Tokens& tokens, const uint8_t* w, const float* w_scales, const __nv_bfloat16* bias,
                  const LinearOutputs& out, int64_t n, int64_t in, int64_t out_features, int sm_count,
                  cudaStream_t stream) {
  const int warps = fp8_linear_warps(out_features, in, sm_count);
  const int64_t blocks = (out_features + kTileRows - 1) / kTileRows;
  size_t shared_bytes = static_cast<size_t>(warps) * kTiles * 4 * 32 * sizeof(float);
  if constexpr (kQuantizesHere<Tokens>) {
    shared_bytes += kMaxQuantizedRows * sizeof(float) + static_cast<size_t>(n * (in + kRowPad));
    // Past the 48 KB a launch may ask for by default; set once for the largest the rule allows.
    static const bool raised = [] {
      const size_t most = kMaxWarps * kTiles * 4 * 32 * sizeof(float) + kMaxQuantizedRows * sizeof(float) +
                          static_cast<size_t>(kFp8QuantizeHereMaxBytes);
      FG_CUDA_CHECK(cudaFuncSetAttribute(fp8_small_n_linear_kernel<kTiles, Tokens>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(most)));
      return true;
    }();
    (void)raised;
  }
  launch_with_pdl(fp8_small_n_linear_kernel<kTiles, Tokens>, dim3(static_cast<unsigned>(blocks)), dim3(warps * 32),
                  shared_bytes, stream, tokens, w, w_scales, bias, out, static_cast<int>(n), static_cast<int>(in),
                  static_cast<int>(out_features));
}

}  // namespace

void launch_fp8_small_n_linear(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                               const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t in,
                               int64_t out_features, int sm_count, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  // The two instantiations differ only in whether token rows 8..15 have a tile of their own.
  const E4m3Tokens tokens{x, x_scales};
  if (n > 8) launch_tiles<2>(tokens, w, w_scales, bias, out, n, in, out_features, sm_count, stream);
  else launch_tiles<1>(tokens, w, w_scales, bias, out, n, in, out_features, sm_count, stream);
}

void launch_fp8_small_n_linear_quantizing(const __nv_bfloat16* x, float static_scale, const uint8_t* w,
                                          const float* w_scales, const __nv_bfloat16* bias, const LinearOutputs& out,
                                          int64_t n, int64_t in, int64_t out_features, int sm_count,
                                          cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  launch_tiles<1>(QuantizedHereTokens<Bf16Rows>{{x}, static_scale}, w, w_scales, bias, out, n, in, out_features,
                  sm_count, stream);
}

void launch_fp8_small_n_linear_silu_mul_quantizing(const __nv_bfloat16* gate, const __nv_bfloat16* up,
                                                   int64_t in_stride, float static_scale, const uint8_t* w,
                                                   const float* w_scales, const __nv_bfloat16* bias,
                                                   const LinearOutputs& out, int64_t n, int64_t in,
                                                   int64_t out_features, int sm_count, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  launch_tiles<1>(QuantizedHereTokens<SiluMulRows>{{gate, up, in_stride}, static_scale}, w, w_scales, bias, out, n,
                  in, out_features, sm_count, stream);
}

}  // namespace fg::cuda
