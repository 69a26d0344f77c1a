// bench/common/random_fill.cu — the random fill: a counter-based hash per element (splitmix64),
// so the values do not depend on the launch shape.
#include "bench/common/random_fill.h"

#include <algorithm>

#include "core/cuda/cuda_check.h"

namespace fg::bench {

namespace {

__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void __launch_bounds__(256) fill_random_bf16_kernel(__nv_bfloat16* __restrict__ p, int64_t count,
                                                               uint64_t seed, float center, float scale) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float u = static_cast<float>(mix(seed ^ mix(static_cast<uint64_t>(i))) >> 40) * 0x1p-23f - 1.0f;
    p[i] = __float2bfloat16_rn(center + scale * u);
  }
}

}  // namespace

void launch_fill_random_bf16(__nv_bfloat16* p, int64_t count, uint64_t seed, float center, float scale,
                             cudaStream_t stream) {
  if (count == 0) return;
  const int64_t blocks = std::min<int64_t>((count + 255) / 256, 8192);
  fill_random_bf16_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(p, count, seed, center, scale);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::bench
