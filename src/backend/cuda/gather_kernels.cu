// backend/cuda/gather_kernels.cu — the row gather (one block per output row) and the column
// split (rows along y, 16-byte column vectors along x), both in 16-byte copies.
#include <algorithm>

#include "core/cuda/cuda_check.h"
#include "backend/cuda/gather_kernels.h"
#include "core/cuda/pdl.cuh"

namespace fg::cuda {

namespace {

__global__ void __launch_bounds__(256) gather_rows_kernel(const uint4* __restrict__ src,
                                                          const int32_t* __restrict__ indices,
                                                          uint4* __restrict__ out, int64_t num_src_rows,
                                                          int64_t row_vecs) {
  allow_dependent_grids();  // PDL: the next kernel may launch; it waits for this grid
  wait_for_prerequisite_grids();
  const int64_t row = blockIdx.x;
  const int64_t index = indices[row];
  const int64_t from = index < 0 ? 0 : (index >= num_src_rows ? num_src_rows - 1 : index);
  const uint4* s = src + from * row_vecs;
  uint4* d = out + row * row_vecs;
  for (int64_t i = threadIdx.x; i < row_vecs; i += blockDim.x) d[i] = s[i];
}

__global__ void __launch_bounds__(256) split_columns_kernel(const uint4* __restrict__ span, int64_t n,
                                                            int64_t row_vecs, const LinearOutputs parts) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();
  for (int64_t row = blockIdx.y; row < n; row += gridDim.y) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < row_vecs;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      // A vector never straddles two parts: their widths are multiples of 8.
      *reinterpret_cast<uint4*>(parts.at<__nv_bfloat16>(static_cast<int>(row), i * 8)) = span[row * row_vecs + i];
    }
  }
}

}  // namespace

void launch_split_columns(const void* span, int64_t n, const LinearOutputs& parts, cudaStream_t stream) {
  const int64_t row_vecs = parts.begin[parts.parts] / 8;
  if (n == 0 || row_vecs == 0) return;
  const unsigned across = static_cast<unsigned>(std::min<int64_t>((row_vecs + 255) / 256, 65535));
  const unsigned down = static_cast<unsigned>(std::min<int64_t>(n, 65535));
  launch_with_pdl(split_columns_kernel, dim3(across, down), dim3(256), 0, stream, static_cast<const uint4*>(span), n,
                  row_vecs, parts);
}

void launch_gather_rows(const void* src, const int32_t* indices, void* out, int64_t num_indices,
                        int64_t num_src_rows, int64_t row_bytes, cudaStream_t stream) {
  if (num_indices == 0) return;
  const int64_t row_vecs = row_bytes / 16;
  const int threads = row_vecs >= 256 ? 256 : static_cast<int>(((row_vecs + 31) / 32) * 32);
  launch_with_pdl(gather_rows_kernel, dim3(static_cast<unsigned>(num_indices)), dim3(threads), 0, stream,
                  static_cast<const uint4*>(src), indices, static_cast<uint4*>(out), num_src_rows, row_vecs);
}

}  // namespace fg::cuda
