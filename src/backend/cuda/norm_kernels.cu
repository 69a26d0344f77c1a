// backend/cuda/norm_kernels.cu — the RMSNorm family: one block per row for hidden-wide rows
// (plain, and fused with the residual add), one lane group per head for Qwen3's q/k norm.
//
// A row lives in registers between its two passes (sum of squares, then scale), so each element
// is read once and written once. The sum's order depends on the row width alone.
#include "backend/cuda/bf16_vec.cuh"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/norm_kernels.h"
#include "core/cuda/pdl.cuh"

namespace fg::cuda {

namespace {

constexpr int kVecsPerThread = 4;  // 16-byte vectors per thread: hidden <= 1024 * 4 * 8

template <bool kAddResidual>
__global__ void __launch_bounds__(1024) rms_norm_kernel(const bf16* __restrict__ x, bf16* __restrict__ residual,
                                                        const bf16* __restrict__ weight, float eps,
                                                        bf16* __restrict__ out, int hidden) {
  __shared__ float scratch[32];
  // PDL: the matmul that follows a norm may start fetching its weights now (it waits for this grid
  // before reading the normed rows). The norm's own weight depends on no kernel, so it is requested
  // before this grid waits for the previous one: its DRAM round trip overlaps that grid's tail
  // instead of following the sum of squares.
  allow_dependent_grids();
  const int vecs = hidden / 8;
  const uint4* w = reinterpret_cast<const uint4*>(weight);
  uint4 w_vec[kVecsPerThread];
#pragma unroll
  for (int j = 0; j < kVecsPerThread; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    w_vec[j] = i < vecs ? __ldg(w + i) : make_uint4(0, 0, 0, 0);
  }
  wait_for_prerequisite_grids();
  const int64_t row = blockIdx.x;
  const uint4* x_row = reinterpret_cast<const uint4*>(x + row * hidden);
  uint4* res_row = reinterpret_cast<uint4*>(residual + row * hidden);

  float v[kVecsPerThread][8];  // this thread's vectors of the row, fp32
  float sum_sq = 0.0f;
#pragma unroll
  for (int j = 0; j < kVecsPerThread; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i >= vecs) continue;
    unpack_bf16x8(x_row[i], v[j]);
    if constexpr (kAddResidual) {
      float r[8];
      unpack_bf16x8(res_row[i], r);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[j][e] = bf16_round(v[j][e] + r[e]);
      res_row[i] = pack_bf16x8(v[j]);  // exact: already rounded
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) sum_sq += v[j][e] * v[j][e];
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(hidden) + eps);

  uint4* out_row = reinterpret_cast<uint4*>(out + row * hidden);
#pragma unroll
  for (int j = 0; j < kVecsPerThread; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i >= vecs) continue;
    float wf[8], o[8];
    unpack_bf16x8(w_vec[j], wf);
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = wf[e] * (v[j][e] * inv_rms);
    out_row[i] = pack_bf16x8(o);
  }
}

// Rows of head_dim = 8 * group lanes; a group never straddles a warp (group divides 32), so the
// butterfly stays inside it. Every lane runs the shuffles, also past the last row.
__global__ void __launch_bounds__(256) head_rms_norm_kernel(bf16* __restrict__ x, const bf16* __restrict__ weight,
                                                            float eps, int64_t rows, int head_dim) {
  allow_dependent_grids();  // PDL, as in rms_norm_kernel: the weight first, then the wait
  const int group = head_dim / 8;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = thread / group;
  const int part = static_cast<int>(thread % group);
  const uint4 w_vec = __ldg(reinterpret_cast<const uint4*>(weight) + part);
  wait_for_prerequisite_grids();
  const bool valid = row < rows;
  uint4* p = reinterpret_cast<uint4*>(x + (valid ? row : 0) * head_dim) + part;

  float v[8];
  unpack_bf16x8(valid ? *p : make_uint4(0, 0, 0, 0), v);
  float sum_sq = 0.0f;
#pragma unroll
  for (int e = 0; e < 8; ++e) sum_sq += v[e] * v[e];
  for (int offset = group / 2; offset > 0; offset >>= 1) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  const float inv_rms = rsqrtf(sum_sq / static_cast<float>(head_dim) + eps);
  if (!valid) return;

  float wf[8], o[8];
  unpack_bf16x8(w_vec, wf);
#pragma unroll
  for (int e = 0; e < 8; ++e) o[e] = wf[e] * (v[e] * inv_rms);
  *p = pack_bf16x8(o);
}

// Threads per row: enough that kVecsPerThread vectors each cover the row, in whole warps.
int row_threads(int64_t hidden) {
  const int64_t vecs = hidden / 8;
  const int64_t per_thread = (vecs + kVecsPerThread - 1) / kVecsPerThread;
  return static_cast<int>(((per_thread + 31) / 32) * 32);
}

template <bool kAddResidual>
void launch_row_norm(const bf16* x, bf16* residual, const bf16* weight, float eps, bf16* out, int64_t rows,
                     int64_t hidden, cudaStream_t stream) {
  if (rows == 0) return;
  launch_with_pdl(rms_norm_kernel<kAddResidual>, dim3(static_cast<unsigned>(rows)), dim3(row_threads(hidden)), 0,
                  stream, x, residual, weight, eps, out, static_cast<int>(hidden));
}

}  // namespace

void launch_rms_norm(const bf16* x, const bf16* weight, float eps, bf16* out, int64_t rows, int64_t hidden,
                     cudaStream_t stream) {
  launch_row_norm<false>(x, nullptr, weight, eps, out, rows, hidden, stream);
}

void launch_add_rms_norm(bf16* residual, const bf16* x, const bf16* weight, float eps, bf16* out, int64_t rows,
                         int64_t hidden, cudaStream_t stream) {
  launch_row_norm<true>(x, residual, weight, eps, out, rows, hidden, stream);
}

void launch_head_rms_norm(bf16* x, const bf16* weight, float eps, int64_t rows, int64_t head_dim,
                          cudaStream_t stream) {
  if (rows == 0) return;
  constexpr int kThreads = 256;
  const int64_t threads = rows * (head_dim / 8);
  launch_with_pdl(head_rms_norm_kernel, dim3(static_cast<unsigned>((threads + kThreads - 1) / kThreads)),
                  dim3(kThreads), 0, stream, x, weight, eps, rows, static_cast<int>(head_dim));
}

}  // namespace fg::cuda
