// attention/cuda/attention_bench.cu — the device side of the attention benchmark: a random bf16
// fill for caches and queries of many GiB, which would take minutes from the host. The driver
// (tables, timing, JSON) is attention_bench.cpp: it builds Tensors, whose header nvcc cannot
// compile (fmt's compile-time format checks).
#include <cuda_bf16.h>

#include <algorithm>

#include "attention/cuda/attention_bench.h"
#include "core/cuda/cuda_check.h"

namespace fg::attn {
namespace {

// splitmix64 of (seed, index): independent values without any state.
__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_random_bf16_kernel(__nv_bfloat16* p, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint64_t bits = mix(seed * 0x100000001b3ull + i);
    const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    p[i] = __float2bfloat16((2.0f * u - 1.0f) * scale);
  }
}

}  // namespace

void fill_random_bf16(void* p, size_t n, uint64_t seed, float scale, cudaStream_t stream) {
  if (n == 0) return;
  const size_t blocks = std::min<size_t>((n + 255) / 256, 65536);
  fill_random_bf16_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(p), n,
                                                                             seed, scale);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::attn
