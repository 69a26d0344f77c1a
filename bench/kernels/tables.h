// bench/kernels/tables.h — the tables of `bench kernels`, one function each: each prints its table
// and returns its rows as JSON (kernel_bench.cpp runs the ones asked for).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fg {
class CudaBackend;
}

namespace fg::bench {

// linear_tables.cpp: the decode matmuls at 1, 4 and 16 token rows, the engine's kernels against
// cuBLASLt and a read of the weight alone; and cuBLASLt past 16 rows, where the engine's stop.
nlohmann::json bench_linears(CudaBackend& backend, double copy_gbps);
nlohmann::json bench_linear_rows(CudaBackend& backend, double copy_gbps);

// setting_sweeps.cpp: a kernel setting swept over the decode shapes, the measurement behind its rule.
nlohmann::json bench_streamed_k_slices(CudaBackend& backend);
nlohmann::json bench_streamed_blocks_per_sm(CudaBackend& backend);
nlohmann::json bench_direct_warps(CudaBackend& backend);

// fused_tables.cpp: the fused ops against the launches they replace.
nlohmann::json bench_gated_mlp(CudaBackend& backend, double copy_gbps);
nlohmann::json bench_residual_stream(CudaBackend& backend);

// decode_step_bench.cpp: whole decode steps on random weights, eager and as one graph replay, with
// the graph replay of the batches in `breakdown_batches` broken down by kernel; with `fp8`, the
// linears quantized to FP8 on the device first.
nlohmann::json bench_decode_steps(CudaBackend& backend, const std::string& attention,
                                  const std::vector<int64_t>& breakdown_batches, bool fp8 = false);

// fp8_tables.cpp: the FP8 decode matmuls (1-16 rows) against BF16 and cuBLASLt's FP8 GEMM, and
// cuBLASLt's FP8 GEMM against its BF16 one at 512-8192 rows.
nlohmann::json bench_fp8_linears(CudaBackend& backend, double copy_gbps);
nlohmann::json bench_fp8_gemm_rows(CudaBackend& backend);

}  // namespace fg::bench
