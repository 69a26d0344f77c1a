// backend/cuda/fp8_gemm_cutlass.cu — CUTLASS's Hopper FP8 GEMM with the FP8 linear's scales in an
// epilogue visitor tree (fp8_gemm_cutlass.h). Two instantiations only: with the bias (possibly
// null) and with the residual add; each takes minutes of nvcc, so no more tile shapes than needed.
#include "backend/cuda/fp8_gemm_cutlass.h"

#include "backend/cuda/fp8_gemm_cutlass.cuh"

namespace fg::cuda {

namespace {

// Ping-pong consumers (one tile's epilogue overlaps the other's mainloop), FP8 fast accumulation,
// 128 x 128 x 128 tiles on clusters of two. On an H100 (bench/RESULTS.md, 2026-12-07) it led the
// configurations tried, by mean TFLOP/s at 512-8192 rows: this one 1,080-1,320; cooperative with
// fp32 promotion every k block 890-1,180; cooperative fast accumulation 1,010-1,230; 128 x 256
// tiles 750-1,350 (ahead on the gate/up span past 512 rows and at 8192, far behind at 512);
// 64-row ping-pong tiles with promotion 650-760.
struct EngineConfig {
  using CtaTile = fp8_gemm::Shape<fp8_gemm::_128, fp8_gemm::_128, fp8_gemm::_128>;
  using Cluster = fp8_gemm::Shape<fp8_gemm::_2, fp8_gemm::_1, fp8_gemm::_1>;
  using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8FastAccum;
  using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
};

}  // namespace

void launch_fp8_gemm_scaled(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                            const __nv_bfloat16* bias, __nv_bfloat16* out, bool add_to_output, int64_t n, int64_t in,
                            int64_t out_features, int sm_count, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  if (add_to_output && bias != nullptr) raise_error("CUTLASS FP8 GEMM: a bias with the residual add");
  if (n > INT32_MAX || in > INT32_MAX || out_features > INT32_MAX)
    raise_error("CUTLASS FP8 GEMM: extents past 32 bits");
  if (add_to_output)
    fp8_gemm::run_scaled_fp8_gemm<EngineConfig, true>(x, x_scales, w, w_scales, nullptr, out, static_cast<int>(n),
                                                      static_cast<int>(in), static_cast<int>(out_features), sm_count,
                                                      stream);
  else
    fp8_gemm::run_scaled_fp8_gemm<EngineConfig, false>(x, x_scales, w, w_scales, bias, out, static_cast<int>(n),
                                                       static_cast<int>(in), static_cast<int>(out_features), sm_count,
                                                       stream);
}

}  // namespace fg::cuda
