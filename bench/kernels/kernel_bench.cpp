// bench/kernels/kernel_bench.cpp — the driver of `bench kernels` (see kernel_bench.h): the device
// and its copy bandwidth, then the tables asked for (tables.h), then the JSON.
#include "bench/kernels/kernel_bench.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/kernels/bench_support.h"
#include "bench/kernels/tables.h"
#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace fg::bench {

const std::vector<std::string>& kernel_benchmark_tables() {
  static const std::vector<std::string> tables = {"linear",       "gated_mlp",   "residual_stream",
                                                  "streamed_k_slices", "streamed_blocks_per_sm",
                                                  "direct_warps", "decode_step", "linear_rows",
                                                  "fp8_linear", "fp8_gemm_rows", "decode_step_fp8"};
  return tables;
}

int run_kernel_benchmarks(const std::string& json_out, const std::string& attention,
                          const std::vector<std::string>& tables, const std::vector<int64_t>& breakdown_batches) {
  const std::vector<std::string>& known = kernel_benchmark_tables();
  for (const std::string& t : tables)
    FG_CHECK(std::find(known.begin(), known.end(), t) != known.end(),
             "bench kernels: no table named '{}' (known: {})", t, fmt::join(known, ", "));
  auto wanted = [&](const char* t) {
    return tables.empty() || std::find(tables.begin(), tables.end(), t) != tables.end();
  };
  CudaBackend backend(0);
  cudaDeviceProp prop{};
  FG_CUDA_CHECK(cudaGetDeviceProperties(&prop, backend.device_index()));
  fmt::print("device: {} ({} SMs, L2 {} MB)\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);

  const double copy_gbps = copy_bandwidth_gbps(backend);
  fmt::print("device-to-device copy: {:.0f} GB/s (bytes read + written)\n", copy_gbps);
  nlohmann::json result;
  result["device"] = prop.name;
  result["copy_gbps"] = copy_gbps;
  if (wanted("linear")) result["linear"] = bench_linears(backend, copy_gbps);
  if (wanted("linear_rows")) result["linear_rows"] = bench_linear_rows(backend, copy_gbps);
  if (wanted("gated_mlp")) result["gated_mlp"] = bench_gated_mlp(backend, copy_gbps);
  if (wanted("residual_stream")) result["residual_stream"] = bench_residual_stream(backend);
  if (wanted("streamed_k_slices")) result["streamed_k_slices"] = bench_streamed_k_slices(backend);
  if (wanted("streamed_blocks_per_sm")) result["streamed_blocks_per_sm"] = bench_streamed_blocks_per_sm(backend);
  if (wanted("direct_warps")) result["direct_warps"] = bench_direct_warps(backend);
  if (wanted("decode_step")) result["decode_step"] = bench_decode_steps(backend, attention, breakdown_batches);
  if (wanted("fp8_linear")) result["fp8_linear"] = bench_fp8_linears(backend, copy_gbps);
  if (wanted("fp8_gemm_rows")) result["fp8_gemm_rows"] = bench_fp8_gemm_rows(backend);
  if (wanted("decode_step_fp8"))
    result["decode_step_fp8"] = bench_decode_steps(backend, attention, breakdown_batches, /*fp8=*/true);
  if (!json_out.empty()) {
    std::ofstream(json_out) << result.dump(2) << "\n";
    fmt::print("\nwritten to {}\n", json_out);
  }
  return 0;
}

}  // namespace fg::bench
