// backend/cuda/fp8_gemm_cutlass.cu — CUTLASS's Hopper FP8 GEMM with the FP8 linear's scales in an
// epilogue visitor tree (fp8_gemm_cutlass.h). Two instantiations only: with the bias (possibly
// null) and with the residual add; each takes minutes of nvcc, so no more tile shapes than needed.
#include "backend/cuda/fp8_gemm_cutlass.h"

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include <string>
#include <type_traits>

#include "core/cuda/cuda_check.h"

namespace fg::cuda {

namespace {

namespace fusion = cutlass::epilogue::fusion;
using cute::_0;
using cute::_1;
using cute::_2;
using cute::_128;
using cute::Shape;
using cute::Stride;

using E4m3 = cutlass::float_e4m3_t;
using Bf16 = cutlass::bfloat16_t;
constexpr auto kNearest = cutlass::FloatRoundStyle::round_to_nearest;

// Ping-pong consumers (one tile's epilogue overlaps the other's mainloop), FP8 fast accumulation,
// 128 x 128 x 128 tiles on clusters of two. On an H100 (bench/RESULTS.md, 2026-12-07) it led the
// configurations tried, by mean TFLOP/s at 512-8192 rows: this one 1,080-1,320; cooperative with
// fp32 promotion every k block 890-1,180; cooperative fast accumulation 1,010-1,230; 128 x 256
// tiles 750-1,350 (ahead on the gate/up span past 512 rows and at 8192, far behind at 512);
// 64-row ping-pong tiles with promotion 650-760.
struct EngineConfig {
  using CtaTile = Shape<_128, _128, _128>;
  using Cluster = Shape<_2, _1, _1>;
  using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8FastAccum;
  using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
};

template <bool kAddToOutput>
struct ScaledFp8Gemm {
  using CtaTile = EngineConfig::CtaTile;
  using Cluster = EngineConfig::Cluster;
  // (acc * x_scales[i]) * w_scales[j], in fp32.
  using TokenScale = fusion::Sm90ColBroadcast<0, CtaTile, float, float, Stride<_1, _0, int64_t>>;
  using ChannelScale = fusion::Sm90RowBroadcast<0, CtaTile, float, float, Stride<_0, _1, int64_t>>;
  using Multiply = fusion::Sm90Compute<cutlass::multiplies, float, float, kNearest>;
  using Scaled = fusion::Sm90EVT<Multiply, fusion::Sm90EVT<Multiply, fusion::Sm90AccFetch, TokenScale>, ChannelScale>;
  // + bias[j] (0 where the bias is null), rounded once; or that rounded first, then + out[i, j].
  using Bias = fusion::Sm90RowBroadcast<0, CtaTile, Bf16, float, Stride<_0, _1, int64_t>>;
  using Round = fusion::Sm90Compute<cutlass::epilogue::thread::Identity, Bf16, float, kNearest>;
  using Add = fusion::Sm90Compute<cutlass::plus, Bf16, float, kNearest>;
  using Epilogue = std::conditional_t<kAddToOutput,
                                      fusion::Sm90EVT<Add, fusion::Sm90EVT<Round, Scaled>, fusion::Sm90SrcFetch<Bf16>>,
                                      fusion::Sm90EVT<Add, Scaled, Bias>>;
  using ElementC = std::conditional_t<kAddToOutput, Bf16, void>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, CtaTile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, ElementC, cutlass::layout::RowMajor, 8, Bf16,
      cutlass::layout::RowMajor, 8, EngineConfig::EpilogueSchedule, Epilogue>::CollectiveOp;
  // x row-major [n, in] and w [out_features, in] read as column-major [in, out_features]: both
  // k-major, as FP8 wgmma requires.
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, E4m3, cutlass::layout::RowMajor, 16, E4m3,
      cutlass::layout::ColumnMajor, 16, float, CtaTile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      EngineConfig::KernelSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

std::string shape_string(int n, int in, int out_features) {
  return std::to_string(n) + " rows of " + std::to_string(in) + " inputs to " + std::to_string(out_features) +
         " outputs";
}

template <bool kAddToOutput>
void run_scaled_fp8_gemm(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                         const __nv_bfloat16* bias, __nv_bfloat16* out, int n, int in, int out_features, int sm_count,
                         cudaStream_t stream) {
  using Gemm = typename ScaledFp8Gemm<kAddToOutput>::Gemm;
  using Kernel = typename Gemm::GemmKernel;
  const auto stride_x = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, {n, in, 1});
  const auto stride_w = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, {out_features, in, 1});
  const auto stride_out = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, {n, out_features, 1});
  auto* out_values = reinterpret_cast<Bf16*>(out);
  typename Gemm::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {n, out_features, in, 1},
      {reinterpret_cast<const E4m3*>(x), stride_x, reinterpret_cast<const E4m3*>(w), stride_w},
      {{}, kAddToOutput ? out_values : nullptr, stride_out, out_values, stride_out}};
  args.hw_info.sm_count = sm_count;
  auto& visitors = args.epilogue.thread;
  if constexpr (kAddToOutput) {
    visitors.op_0.op_0.op_0.op_1 = {x_scales, 0.0f, {}};
    visitors.op_0.op_0.op_1 = {w_scales, 0.0f, {}};
  } else {
    visitors.op_0.op_0.op_1 = {x_scales, 0.0f, {}};
    visitors.op_0.op_1 = {w_scales, 0.0f, {}};
    visitors.op_1 = {reinterpret_cast<const Bf16*>(bias), Bf16(0.0f), {}};
  }
  // The message is built on failure only: this runs at every launch.
  const auto check = [&](cutlass::Status status, const char* what) {
    if (status != cutlass::Status::kSuccess)
      raise_error(std::string("CUTLASS FP8 GEMM: ") + what + " " + shape_string(n, in, out_features) + ": " +
                  cutlass::cutlassGetStatusString(status));
  };
  Gemm gemm;
  check(gemm.can_implement(args), "refuses");
  if (Gemm::get_workspace_size(args) != 0)
    raise_error("CUTLASS FP8 GEMM asks for a workspace for " + shape_string(n, in, out_features));
  check(gemm.initialize(args, nullptr, stream), "initialize for");
  check(gemm.run(stream), "launch for");
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_fp8_gemm_scaled(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                            const __nv_bfloat16* bias, __nv_bfloat16* out, bool add_to_output, int64_t n, int64_t in,
                            int64_t out_features, int sm_count, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  if (add_to_output && bias != nullptr) raise_error("CUTLASS FP8 GEMM: a bias with the residual add");
  if (n > INT32_MAX || in > INT32_MAX || out_features > INT32_MAX)
    raise_error("CUTLASS FP8 GEMM: extents past 32 bits");
  const int rows = static_cast<int>(n), k = static_cast<int>(in), cols = static_cast<int>(out_features);
  if (add_to_output)
    run_scaled_fp8_gemm<true>(x, x_scales, w, w_scales, nullptr, out, rows, k, cols, sm_count, stream);
  else
    run_scaled_fp8_gemm<false>(x, x_scales, w, w_scales, bias, out, rows, k, cols, sm_count, stream);
}

}  // namespace fg::cuda
