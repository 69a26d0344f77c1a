// backend/cuda/fill_kernels.h — launcher of a deterministic random fill, for benchmarks that need
// large non-zero weights without generating them on the host (timing on zeros flatters kernels).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// p[i] = bf16(center + scale * u_i), u_i uniform in [-1, 1) from a hash of (seed, i).
void launch_fill_random_bf16(__nv_bfloat16* p, int64_t count, uint64_t seed, float center, float scale,
                             cudaStream_t stream);

}  // namespace fg::cuda
