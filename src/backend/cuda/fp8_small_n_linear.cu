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

#include "backend/cuda/fp8_kernels.h"
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

// Token rows are written by the previous kernel: a coherent load after the wait (pdl.cuh).
__device__ __forceinline__ uint4 load_tokens(const uint8_t* p) { return load_written_16(p); }

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

// kTiles: n8 tiles of token rows, 2 when n > 8. partial (dynamic shared memory):
// [warp][tile][accumulator][lane] fp32.
template <int kTiles>
__global__ void __launch_bounds__(kMaxWarps * 32, 1)
    fp8_small_n_linear_kernel(const uint8_t* x, const float* x_scales,
                              const uint8_t* __restrict__ w, const float* __restrict__ w_scales,
                              const __nv_bfloat16* __restrict__ bias, const LinearOutputs out, int n, int in,
                              int out_features) {
  extern __shared__ float partial[];
  allow_dependent_grids();  // the next kernel may start fetching what it does not wait for
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * kTileRows;

  // Weight rows past the end (a last, partial block) read the last row; their outputs are not
  // stored, and no other output depends on them. Token rows past n read row 0 (addresses other
  // lanes read anyway) and are zeroed after the load, so that no load waits on a predicate.
  const uint8_t* w_lo = w + static_cast<int64_t>(min(row0 + g, out_features - 1)) * in + t * 16;
  const uint8_t* w_hi = w + static_cast<int64_t>(min(row0 + g + 8, out_features - 1)) * in + t * 16;
  bool has_x[kTiles];
  const uint8_t* x_lane[kTiles];
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    has_x[j] = g + 8 * j < n;
    x_lane[j] = x + static_cast<int64_t>(has_x[j] ? g + 8 * j : 0) * in + t * 16;
  }
  const uint4 zero = make_uint4(0, 0, 0, 0);

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
  auto load_group = [&](int k, uint4 (&lo)[kUnroll], uint4 (&hi)[kUnroll]) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      lo[u] = load_weights(w_lo + k + u * kStepK);
      hi[u] = load_weights(w_hi + k + u * kStepK);
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
        for (int j = 0; j < kTiles; ++j) xv[u][j] = load_tokens(x_lane[j] + k + (u0 + u) * kStepK);
#pragma unroll
      for (int u = 0; u < kTokenSteps; ++u) step(lo[u0 + u], hi[u0 + u], xv[u]);
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
      for (int j = 0; j < kTiles; ++j) xv[j] = load_tokens(x_lane[j] + k);
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

template <int kTiles>
void launch_tiles(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                  const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t in, int64_t out_features,
                  int warps, cudaStream_t stream) {
  const int64_t blocks = (out_features + kTileRows - 1) / kTileRows;
  const size_t shared_bytes = static_cast<size_t>(warps) * kTiles * 4 * 32 * sizeof(float);
  launch_with_pdl(fp8_small_n_linear_kernel<kTiles>, dim3(static_cast<unsigned>(blocks)), dim3(warps * 32),
                  shared_bytes, stream, x, x_scales, w, w_scales, bias, out, static_cast<int>(n),
                  static_cast<int>(in), static_cast<int>(out_features));
}

}  // namespace

void launch_fp8_small_n_linear(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                               const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t in,
                               int64_t out_features, int sm_count, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  const int warps = fp8_linear_warps(out_features, in, sm_count);
  // The two instantiations differ only in whether token rows 8..15 have a tile of their own.
  if (n > 8) launch_tiles<2>(x, x_scales, w, w_scales, bias, out, n, in, out_features, warps, stream);
  else launch_tiles<1>(x, x_scales, w, w_scales, bias, out, n, in, out_features, warps, stream);
}

}  // namespace fg::cuda
