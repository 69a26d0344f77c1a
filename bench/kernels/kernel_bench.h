// bench/kernels/kernel_bench.h — `fullgraph bench kernels`: the measurements behind the kernel
// targets of DESIGN.md (copy bandwidth as the ceiling, decode-shaped matmuls against it, the fused
// ops against the steps they replace, the decode step), printed as tables and written as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fg::bench {

// The tables run_kernel_benchmarks can run, by the names of their JSON keys.
const std::vector<std::string>& kernel_benchmark_tables();

// Runs the benchmarks named in `tables` (all of them when empty; see kernel_benchmark_tables) on
// CUDA device 0 with the GPU attention backend `attention` for the decode steps; writes the
// numbers to `json_out` (nothing when empty). The decode steps of the batches in
// `breakdown_batches` are broken down by kernel. Returns a process exit code; raises fg::Error for
// a table name it does not know.
int run_kernel_benchmarks(const std::string& json_out, const std::string& attention,
                          const std::vector<std::string>& tables, const std::vector<int64_t>& breakdown_batches);

}  // namespace fg::bench
