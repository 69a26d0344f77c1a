// tests/gpu/late_copy_kernels.h — a device copy that lands late on purpose, for tests of what a
// kernel launched with PDL (pdl.cuh) may read before its wait: launched just before such a kernel,
// it lets it start at once, then holds its bytes back for `delay_ns`, so that anything the
// dependent reads too early is still the old contents.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::gpu_test {

// With PDL: lets its dependents launch, waits for the grid before it, spins for delay_ns, then
// copies `bytes` (a multiple of 16, both pointers 16-byte aligned) from src to dst. Raises fg::Error.
void launch_late_copy(void* dst, const void* src, int64_t bytes, int64_t delay_ns, cudaStream_t stream);

}  // namespace fg::gpu_test
