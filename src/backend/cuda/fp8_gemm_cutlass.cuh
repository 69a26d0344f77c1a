// backend/cuda/fp8_gemm_cutlass.cuh — the CUTLASS FP8 GEMM with the scales in its epilogue,
// templated on its tile configuration (fp8_gemm_cutlass.h).
#pragma once

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

namespace fg::cuda::fp8_gemm {

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

template <class Config, bool kAddToOutput>
struct ScaledFp8Gemm {
  using CtaTile = typename Config::CtaTile;
  using Cluster = typename Config::Cluster;
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
      cutlass::layout::RowMajor, 8, typename Config::EpilogueSchedule, Epilogue>::CollectiveOp;
  // x row-major [n, in] and w [out_features, in] read as column-major [in, out_features]: both
  // k-major, as FP8 wgmma requires.
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, E4m3, cutlass::layout::RowMajor, 16, E4m3,
      cutlass::layout::ColumnMajor, 16, float, CtaTile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      typename Config::KernelSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

inline void check(cutlass::Status status, const std::string& what) {
  if (status != cutlass::Status::kSuccess)
    raise_error("CUTLASS FP8 GEMM: " + what + ": " + cutlass::cutlassGetStatusString(status));
}

template <class Config, bool kAddToOutput>
void run_scaled_fp8_gemm(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                         const __nv_bfloat16* bias, __nv_bfloat16* out, int n, int in, int out_features, int sm_count,
                         cudaStream_t stream) {
  using Gemm = typename ScaledFp8Gemm<Config, kAddToOutput>::Gemm;
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
  Gemm gemm;
  const std::string shape = std::to_string(n) + " rows of " + std::to_string(in) + " inputs to " +
                            std::to_string(out_features) + " outputs";
  check(gemm.can_implement(args), "refuses " + shape);
  if (Gemm::get_workspace_size(args) != 0) raise_error("CUTLASS FP8 GEMM asks for a workspace for " + shape);
  check(gemm.initialize(args, nullptr, stream), "initialize for " + shape);
  check(gemm.run(stream), "launch for " + shape);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::cuda::fp8_gemm
