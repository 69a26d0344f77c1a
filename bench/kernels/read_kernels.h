// bench/kernels/read_kernels.h — launcher of a kernel that only reads a buffer: an upper limit for
// a decode matmul at its own size (`bench kernels`), beside the 1 GB copy's bandwidth.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::bench {

// Reads bytes (a multiple of 16; p 16-byte aligned) once, with the direct matmul's 16-byte
// L1-bypassing loads and enough blocks for every SM, and combines them so the loads cannot be
// dropped; writes *sink only if the combination hits a value it practically never does. Launched
// with PDL like the matmuls, but its reads wait for nothing (it waits for the launch before it
// only before exiting), so back-to-back launches overlap completely: this is the rate of reading
// the weight when no read ever waits, more than a matmul can have, whose arithmetic waits for its
// input.
void launch_read_only(const void* p, int64_t bytes, unsigned* sink, cudaStream_t stream);

}  // namespace fg::bench
