// backend/cuda/activation_kernels.cu — the elementwise kernels between matmuls: SiLU-and-multiply
// and the residual add, each a grid-stride loop over 16-byte vectors.
#include "backend/cuda/activation_kernels.h"

#include <algorithm>

#include "backend/cuda/bf16_vec.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/pdl.cuh"

namespace fg::cuda {

namespace {

// Rows along y, each row's vectors along x (one row of all `count` elements for contiguous inputs).
__global__ void __launch_bounds__(256) silu_mul_kernel(const uint4* __restrict__ gate, const uint4* __restrict__ up,
                                                       uint4* __restrict__ out, int64_t rows, int64_t row_vecs,
                                                       int64_t in_stride_vecs) {
  allow_dependent_grids();  // the down projection (PDL) may start fetching its weights
  wait_for_prerequisite_grids();  // this kernel is launched with PDL too
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const uint4* gate_row = gate + row * in_stride_vecs;
    const uint4* up_row = up + row * in_stride_vecs;
    uint4* out_row = out + row * row_vecs;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < row_vecs;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      float g[8], u[8], o[8];
      unpack_bf16x8(gate_row[i], g);
      unpack_bf16x8(up_row[i], u);
#pragma unroll
      for (int e = 0; e < 8; ++e) o[e] = g[e] / (1.0f + __expf(-g[e])) * u[e];
      out_row[i] = pack_bf16x8(o);
    }
  }
}

__global__ void __launch_bounds__(256) add_kernel(uint4* __restrict__ residual, const uint4* __restrict__ x,
                                                  int64_t vecs) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vecs;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float r[8], a[8];
    unpack_bf16x8(residual[i], r);
    unpack_bf16x8(x[i], a);
#pragma unroll
    for (int e = 0; e < 8; ++e) r[e] += a[e];
    residual[i] = pack_bf16x8(r);
  }
}

// Enough blocks of 256 threads to fill the device several times over; the loops cover the rest.
unsigned elementwise_blocks(int64_t vecs) { return static_cast<unsigned>(std::min<int64_t>((vecs + 255) / 256, 65536)); }

}  // namespace

void launch_silu_mul(const bf16* gate, const bf16* up, bf16* out, int64_t count, cudaStream_t stream) {
  launch_silu_mul_rows(gate, up, out, 1, count, count, stream);
}

void launch_silu_mul_rows(const bf16* gate, const bf16* up, bf16* out, int64_t rows, int64_t width,
                          int64_t in_stride, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  const int64_t row_vecs = width / 8;
  // Enough blocks across a row and down the rows to fill the device; the loops cover the rest.
  const unsigned across = elementwise_blocks(row_vecs);
  const unsigned down = static_cast<unsigned>(std::min<int64_t>(rows, std::max<int64_t>(1, 65535 / across)));
  launch_with_pdl(silu_mul_kernel, dim3(across, down), dim3(256), 0, stream, reinterpret_cast<const uint4*>(gate),
                  reinterpret_cast<const uint4*>(up), reinterpret_cast<uint4*>(out), rows, row_vecs, in_stride / 8);
}

void launch_add(bf16* residual, const bf16* x, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  const int64_t vecs = count / 8;
  launch_with_pdl(add_kernel, dim3(elementwise_blocks(vecs)), dim3(256), 0, stream, reinterpret_cast<uint4*>(residual),
                  reinterpret_cast<const uint4*>(x), vecs);
}

}  // namespace fg::cuda
