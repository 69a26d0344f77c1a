// bench/common/random_fill.h — the benchmarks' one random fill: deterministic bf16 values made on
// the device, for weights, caches and inputs of many GB that would take minutes from the host.
// Never time on zeros: zeros hide unwritten outputs and can run faster than real data.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fg::bench {

// p[i] = bf16(center + scale * u_i), u_i uniform in [-1, 1) from a hash of (seed, i).
void launch_fill_random_bf16(__nv_bfloat16* p, int64_t count, uint64_t seed, float center, float scale,
                             cudaStream_t stream);

}  // namespace fg::bench
