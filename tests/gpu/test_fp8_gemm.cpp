// tests/gpu/test_fp8_gemm.cpp — the FP8 GEMM past the decode rows (CUTLASS, fp8_gemm_cutlass.h)
// against an fp64 reference of the same e4m3 values (fp8_linear_case.h) within its own accumulation
// bound, stored, with a bias and added to what the output holds; its rows' bits independent of n.
// Outputs are poisoned first. (Its speed: `bench kernels --tables fp8_gemm_rows`.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/fp8_gemm_cutlass.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_info.h"
#include "core/dtype.h"
#include "gpu/fp8_linear_case.h"
#include "gpu/gpu_test_support.h"

namespace fg {
namespace {

using gpu_test::bf16_ptr;
using gpu_test::DeviceBuffer;
using gpu_test::LinearCase;
using gpu_test::LinearShape;
using gpu_test::make_linear_case;
using gpu_test::OutputCheck;

constexpr uint16_t kPoisonBf16 = 0xFFFF;  // a bf16 NaN, never a result here

class Fp8Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    FG_REQUIRE_GPU();
    FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    sm_count_ = cuda::current_device_sm_count();
  }
  void TearDown() override {
    if (stream_ != nullptr) FG_CUDA_CHECK(cudaStreamDestroy(stream_));
  }
  cudaStream_t stream_ = nullptr;
  int sm_count_ = 0;
  std::mt19937 rng_{20261207};
};

// Its accumulation bound relative to S = sum_k |x_k w_k|. wgmma's FP8 accumulator keeps about 14
// bits (DeepSeek-V3 report, 3.3.2, measured on Hopper), and with fast accumulation the whole k
// chain stays in it: each wgmma (k = 32; four per 128-deep k block, the last block padded with
// zeros) adds its products at up to 2^-13 of the partial sum. So 4 * ceil(in / 128) * 2^-13 * S.
// Loose against the decode kernels' fp32 bound, still far below the errors it exists to catch (a
// wrong scale, row or column is off by the value itself).
double fp8_gemm_chain_error(int64_t in) { return static_cast<double>(4 * ((in + 127) / 128)) * 0x1p-13; }

// Row counts past the decode rows: one partial M tile, one past a cluster of two tiles, and a last
// partial tile after several whole ones. Shapes: k shorter than one 128-deep block, a partial last
// k block (4176 = 32 blocks and 80), a partial last N tile (136, 1032) and whole ones (256).
TEST_F(Fp8Gemm, MatchesFp64ReferenceAndRowsAreIndependentOfN) {
  const LinearShape shapes[] = {{40, 48}, {136, 4176}, {256, 4096}, {1032, 1040}};
  constexpr int64_t kRows = 300;
  for (const LinearShape s : shapes) {
    const LinearCase c = make_linear_case(rng_, s.out_features, s.in, kRows, fp8_gemm_chain_error(s.in));
    const auto* w = static_cast<const uint8_t*>(c.dw.tensor.data);
    const auto* w_scales = static_cast<const float*>(c.dw_scales.tensor.data);
    for (const bool add : {false, true})
      for (const bool with_bias : {false, true}) {
        if (add && with_bias) continue;  // the residual add takes no bias
        std::vector<uint16_t> held(static_cast<size_t>(kRows * s.out_features), kPoisonBf16);
        if (add) {
          std::normal_distribution<float> normal(0.0f, 1.0f);
          for (auto& h : held) h = float_to_bf16(normal(rng_));
        }
        std::vector<uint16_t> all_rows;  // the n = kRows launch
        for (const int64_t n : {kRows, int64_t{17}, int64_t{130}, int64_t{257}}) {
          // Token rows exactly [n, in], so that reading a row past n would leave the allocation.
          DeviceBuffer x = gpu_test::device_alloc(DType::kF8E4M3, {n, s.in});
          FG_CUDA_CHECK(
              cudaMemcpy(x.tensor.data, c.dx.tensor.data, static_cast<size_t>(n * s.in), cudaMemcpyDeviceToDevice));
          DeviceBuffer out = gpu_test::device_alloc(DType::kBF16, {kRows, s.out_features});
          gpu_test::upload(out.tensor, held);  // poison, or the residual stream
          cuda::launch_fp8_gemm_scaled(static_cast<const uint8_t*>(x.tensor.data),
                                       static_cast<const float*>(c.dx_scales.tensor.data), w, w_scales,
                                       with_bias ? bf16_ptr(c.dbias) : nullptr,
                                       static_cast<__nv_bfloat16*>(out.tensor.data), add, n, s.in, s.out_features,
                                       sm_count_, stream_);
          FG_CUDA_CHECK(cudaStreamSynchronize(stream_));
          const std::vector<uint16_t> got = gpu_test::download<uint16_t>(out.tensor);
          const std::string what = "FP8 GEMM, " + std::to_string(s.out_features) + " x " + std::to_string(s.in) +
                                   ", n " + std::to_string(n) + (with_bias ? ", bias" : "") + (add ? ", added" : "");
          if (n == kRows) all_rows = got;
          OutputCheck check;
          int64_t stray = 0, differ = 0;
          for (int64_t i = 0; i < kRows; ++i)
            for (int64_t j = 0; j < s.out_features; ++j) {
              const size_t o = static_cast<size_t>(i * s.out_features + j);
              if (i >= n) {
                stray += got[o] != held[o];
                continue;
              }
              check.check(c, with_bias, i, j, got[o], add ? bf16_to_float(held[o]) : NAN, what);
              differ += got[o] != all_rows[o];
            }
          EXPECT_EQ(check.failures, 0) << what;
          EXPECT_EQ(stray, 0) << what << ": outputs written for token rows >= n";
          EXPECT_EQ(differ, 0) << what << ": rows differ from the same rows of the " << kRows << "-row launch";
        }
      }
  }
}

}  // namespace
}  // namespace fg
