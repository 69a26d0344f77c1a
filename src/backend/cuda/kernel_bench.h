// backend/cuda/kernel_bench.h — `fullgraph bench kernels`: the measurements behind the kernel
// targets of DESIGN.md (copy bandwidth as the ceiling, decode-shaped matmuls against it, the eager
// decode step), printed as tables and written as JSON.
#pragma once

#include <string>

namespace fg::cuda {

// Runs every benchmark on CUDA device 0 with the GPU attention backend `attention` for the decode
// steps; writes the numbers to `json_out` (nothing when empty). Returns a process exit code.
int run_kernel_benchmarks(const std::string& json_out, const std::string& attention);

}  // namespace fg::cuda
