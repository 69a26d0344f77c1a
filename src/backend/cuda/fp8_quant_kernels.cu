// backend/cuda/fp8_quant_kernels.cu — rounding rows to e4m3 with a scale per row: bf16 activation
// rows, the outputs of RMSNorm and of SiLU-and-multiply (fused: the bf16 values those kernels
// would store, quantized in place of the store), and weights per output channel.
//
// One block per row. The row's scale needs its max, so every kernel makes two passes over its
// row: the max, then the quantization (of values held in registers where the row fits). The max
// is exact whatever the order of its reduction, so the scale's bits depend on the row's values
// alone. The arithmetic is CpuBackend's fp8_round (cpu_fp8.cpp) step for step: s = max|v| / 448 in
// IEEE fp32 (1 where that is 0), then each value rounded as e4m3_vec.cuh rounds it.
#include <cuda_fp8.h>

#include <algorithm>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/e4m3_vec.cuh"
#include "backend/cuda/fp8_kernels.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/pdl.cuh"

namespace fg::cuda {

namespace {

// Must match norm_kernels.cu: the fused norm reproduces rms_norm_kernel's thread layout, since the
// order of its sum of squares (and so inv_rms, and every normed bit) follows from that layout.
constexpr int kNormVecsPerThread = 4;
int norm_row_threads(int64_t hidden) {
  const int64_t vecs = hidden / 8;
  const int64_t per_thread = (vecs + kNormVecsPerThread - 1) / kNormVecsPerThread;
  return static_cast<int>(((per_thread + 31) / 32) * 32);
}

// Max over a block of blockDim.x threads (a multiple of 32, at most 1024); every thread gets it.
// fmaxf drops NaN, as std::fmax does in the CPU reference.
__device__ __forceinline__ float block_max(float x, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  if (warps == 1) return x;
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float m = 0.0f;
  for (int w = 0; w < warps; ++w) m = fmaxf(m, scratch[w]);
  __syncthreads();  // scratch may be reused
  return m;
}

// The row's scale from its max |v| (or the static scale).
__device__ __forceinline__ float row_scale(float amax, float static_scale) {
  if (static_scale > 0.0f) return static_scale;
  const float s = __fdiv_rn(amax, kE4M3Largest);
  return s == 0.0f ? 1.0f : s;
}

// Where a row's 16-value chunks come from: bf16 rows as they are.
struct Bf16Rows {
  const bf16* x;
  __device__ __forceinline__ void load(int64_t row, int chunk, int width, float (&v)[16]) const {
    const uint4* p = reinterpret_cast<const uint4*>(x + row * width) + 2 * chunk;
    float a[8], b[8];
    unpack_bf16x8(p[0], a);
    unpack_bf16x8(p[1], b);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      v[e] = a[e];
      v[8 + e] = b[e];
    }
  }
};

// ... or silu(gate) * up rounded to bf16: silu_mul_kernel's expression (activation_kernels.cu),
// so that the rounded values are the ones it stores.
struct SiluMulRows {
  const bf16* gate;
  const bf16* up;
  int64_t in_stride;
  __device__ __forceinline__ void load(int64_t row, int chunk, int /*width*/, float (&v)[16]) const {
    const uint4* g_p = reinterpret_cast<const uint4*>(gate + row * in_stride) + 2 * chunk;
    const uint4* u_p = reinterpret_cast<const uint4*>(up + row * in_stride) + 2 * chunk;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float g[8], u[8];
      unpack_bf16x8(g_p[h], g);
      unpack_bf16x8(u_p[h], u);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[8 * h + e] = bf16_round(g[e] / (1.0f + __expf(-g[e])) * u[e]);
    }
  }
};

// Row blockIdx.x of `src`, `width` wide (a multiple of 16). Each thread holds its first chunk in
// registers between the max and the quantization (at 1024 threads that is a row of up to 16,384
// values: every decode width of an 8B model); chunks past it are loaded (and, for SiLU,
// recomputed) again, so that any width fits: the row is still in L1 or L2 by then.
template <typename Source>
__global__ void __launch_bounds__(1024) quantize_rows_kernel(Source src, float static_scale, Fp8RowsView out,
                                                             int width) {
  __shared__ float scratch[32];
  allow_dependent_grids();  // the linear that reads these rows may start fetching its weights
  wait_for_prerequisite_grids();
  const int64_t row = blockIdx.x;
  const int chunks = width / 16;
  const bool held = threadIdx.x < chunks;
  float first[16];
  float amax = 0.0f;
  if (held) {
    src.load(row, threadIdx.x, width, first);
#pragma unroll
    for (int e = 0; e < 16; ++e) amax = fmaxf(amax, fabsf(first[e]));
  }
  if (!(static_scale > 0.0f)) {
    for (int c = threadIdx.x + blockDim.x; c < chunks; c += blockDim.x) {
      float v[16];
      src.load(row, c, width, v);
#pragma unroll
      for (int e = 0; e < 16; ++e) amax = fmaxf(amax, fabsf(v[e]));
    }
    amax = block_max(amax, scratch);  // uniform branch: every thread of the block takes it
  }
  const float s = row_scale(amax, static_scale);
  uint4* q = reinterpret_cast<uint4*>(out.values + row * width);
  const auto quantize16 = [s](const float (&v)[16]) {
    return make_uint4(quantize4(v[0], v[1], v[2], v[3], s), quantize4(v[4], v[5], v[6], v[7], s),
                      quantize4(v[8], v[9], v[10], v[11], s), quantize4(v[12], v[13], v[14], v[15], s));
  };
  if (held) q[threadIdx.x] = quantize16(first);
  for (int c = threadIdx.x + blockDim.x; c < chunks; c += blockDim.x) {
    float v[16];
    src.load(row, c, width, v);
    q[c] = quantize16(v);
  }
  if (threadIdx.x == 0) out.scales[row] = s;
}

// rms_norm_kernel<false> (norm_kernels.cu) up to its bf16 rounding, line for line, then the
// quantization of the rounded values. The thread layout is the norm kernel's (vectors of 8,
// vector i at thread i % blockDim.x), so each thread stores 8 bytes per vector: a warp's store
// still covers 256 contiguous bytes.
__global__ void __launch_bounds__(1024) rms_norm_quantize_kernel(const bf16* __restrict__ x,
                                                                 const bf16* __restrict__ weight, float eps,
                                                                 float static_scale, Fp8RowsView out, int hidden) {
  __shared__ float scratch[32];
  // PDL as in rms_norm_kernel: the norm weight depends on no kernel, so it is requested first.
  allow_dependent_grids();
  const int vecs = hidden / 8;
  const uint4* w = reinterpret_cast<const uint4*>(weight);
  uint4 w_vec[kNormVecsPerThread];
#pragma unroll
  for (int j = 0; j < kNormVecsPerThread; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    w_vec[j] = i < vecs ? __ldg(w + i) : make_uint4(0, 0, 0, 0);
  }
  wait_for_prerequisite_grids();
  const int64_t row = blockIdx.x;
  const uint4* x_row = reinterpret_cast<const uint4*>(x + row * hidden);

  float v[kNormVecsPerThread][8];  // this thread's vectors of the row, fp32; then the normed bf16 values
  float sum_sq = 0.0f;
#pragma unroll
  for (int j = 0; j < kNormVecsPerThread; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i >= vecs) continue;
    unpack_bf16x8(x_row[i], v[j]);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum_sq += v[j][e] * v[j][e];
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(hidden) + eps);

  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < kNormVecsPerThread; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i >= vecs) continue;
    float wf[8];
    unpack_bf16x8(w_vec[j], wf);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      v[j][e] = bf16_round(wf[e] * (v[j][e] * inv_rms));  // the value rms_norm_kernel stores
      amax = fmaxf(amax, fabsf(v[j][e]));
    }
  }
  if (!(static_scale > 0.0f)) amax = block_max(amax, scratch);  // block_sum left scratch free
  const float s = row_scale(amax, static_scale);

  uint2* q_row = reinterpret_cast<uint2*>(out.values + row * hidden);
#pragma unroll
  for (int j = 0; j < kNormVecsPerThread; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i >= vecs) continue;
    q_row[i] = quantize8(v[j], s);
  }
  if (threadIdx.x == 0) out.scales[row] = s;
}

// Threads for a row of `chunks` 16-value chunks: one chunk each up to 1024, in whole warps.
unsigned chunk_threads(int64_t chunks) {
  return static_cast<unsigned>(std::min<int64_t>(1024, std::max<int64_t>(32, (chunks + 31) / 32 * 32)));
}

template <typename Source>
void launch_rows(const Source& src, float static_scale, Fp8RowsView out, int64_t rows, int64_t width,
                 cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  launch_with_pdl(quantize_rows_kernel<Source>, dim3(static_cast<unsigned>(rows)), dim3(chunk_threads(width / 16)), 0,
                  stream, src, static_scale, out, static_cast<int>(width));
}

}  // namespace

void launch_quantize_fp8_rows(const bf16* x, float static_scale, Fp8RowsView out, int64_t rows, int64_t width,
                              cudaStream_t stream) {
  launch_rows(Bf16Rows{x}, static_scale, out, rows, width, stream);
}

void launch_rms_norm_quantize_fp8(const bf16* x, const bf16* weight, float eps, float static_scale, Fp8RowsView out,
                                  int64_t rows, int64_t hidden, cudaStream_t stream) {
  if (rows == 0) return;
  launch_with_pdl(rms_norm_quantize_kernel, dim3(static_cast<unsigned>(rows)), dim3(norm_row_threads(hidden)), 0,
                  stream, x, weight, eps, static_scale, out, static_cast<int>(hidden));
}

void launch_silu_mul_quantize_fp8(const bf16* gate, const bf16* up, int64_t in_stride, float static_scale,
                                  Fp8RowsView out, int64_t rows, int64_t width, cudaStream_t stream) {
  launch_rows(SiluMulRows{gate, up, in_stride}, static_scale, out, rows, width, stream);
}

void launch_quantize_weight_fp8(const bf16* w, uint8_t* q, float* scales, int64_t out_features, int64_t in,
                                cudaStream_t stream) {
  launch_rows(Bf16Rows{w}, 0.0f, Fp8RowsView{q, scales}, out_features, in, stream);
}

}  // namespace fg::cuda
