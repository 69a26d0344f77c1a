// bench/kernels/fp8_tables.cpp — the FP8 tables of `bench kernels`: the decode matmuls (1-16 token
// rows) over e4m3 weights against the engine's BF16 kernels and cuBLASLt's FP8 GEMM (fp8_linear),
// and the engine's FP8 GEMM (CUTLASS's or cuBLASLt's by the rows' bucket) beside both and cuBLASLt's
// BF16 GEMM at prefill sizes (fp8_gemm_rows).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cuda/cublaslt_linear.h"
#include "backend/cuda/fp8_gemm_cutlass.h"
#include "backend/cuda/fp8_kernels.h"
#include "backend/cuda/streamed_linear.h"
#include "bench/kernels/bench_support.h"
#include "bench/kernels/tables.h"

namespace fg::bench {

namespace {

struct Fp8Weight {
  Tensor q, scales;
};

// An FP8 weight quantized on the device from a BF16 one (per output channel).
Fp8Weight quantized(CudaBackend& backend, const Tensor& w, std::vector<std::shared_ptr<void>>& keep) {
  Allocation q = backend.allocate(DType::kF8E4M3, {w.dim(0), w.dim(1)});
  Allocation scales = backend.allocate(DType::kF32, {w.dim(0)});
  backend.quantize_weight_fp8(w, q.tensor, scales.tensor);
  keep.push_back(q.memory);
  keep.push_back(scales.memory);
  return {q.tensor, scales.tensor};
}

// Token rows [rows, in] rounded to FP8 (a scale per row), from random BF16 values.
Fp8Rows quantized_rows(CudaBackend& backend, RandomTensors& random, int64_t rows, int64_t in,
                       std::vector<std::shared_ptr<void>>& keep) {
  const Tensor x = random.bf16({rows, in}, 0.0f, 1.0f);
  Allocation values = backend.allocate(DType::kF8E4M3, {rows, in});
  Allocation scales = backend.allocate(DType::kF32, {rows});
  const Fp8Rows out{values.tensor, scales.tensor};
  backend.quantize_fp8(x, 0.0f, out);
  keep.push_back(values.memory);
  keep.push_back(scales.memory);
  return out;
}

// cuBLASLt's FP8 GEMM, then a pass applying the scales (cuBLASLt refuses the per-row and
// per-channel scale modes on Hopper): the peer of the engine's FP8 matmuls.
void scaled_gemm(cuda::CublasLtLinear& gemm, CudaBackend& backend, const Fp8Rows& x, const Fp8Weight& w,
                 const Tensor& out, int64_t rows, int64_t in, int64_t out_features) {
  gemm.run_fp8(x.values.data, w.q.data, out.data, rows, in, out_features, {rows, rows}, backend.stream());
  cuda::launch_fp8_scale_outputs(static_cast<const __nv_bfloat16*>(out.data), x.scales.as<const float>(),
                                 w.scales.as<const float>(), nullptr, cuda::LinearOutputs::whole(out.data, out_features),
                                 rows, out_features, backend.stream());
}

}  // namespace

nlohmann::json bench_fp8_linears(CudaBackend& backend, double copy_gbps) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nFP8 decode matmuls (e4m3 weight bytes / time; % of copy bandwidth {:.0f} GB/s): direct = the FP8\n"
             "decode kernel (fp8_kernels.h), streamed = StreamedLinear::run_fp8, * = the one the engine picks\n"
             "(prefers_streamed_linear), lt = cuBLASLt's FP8 GEMM and the scaling pass, bf16 = the engine's BF16\n"
             "kernel on the same shape; bf16/fp8 = its time over the picked one's. The LM head stays BF16.\n",
             copy_gbps);
  fmt::print("{:<14} {:<12} {:>7} {:>7} {:>3} | {:>9} {:>5} | {:>9} {:>5} | {:>8} {:>5} | {:>8} | {:>8}\n", "model",
             "matmul", "out", "in", "M", "direct us", "%", "strm us", "%", "lt us", "%", "bf16 us", "bf16/fp8");
  cuda::CublasLtLinear gemm;
  cuda::StreamedLinear streamed(backend.sm_count());
  for (const ModelShape& m : model_shapes()) {
    for (const LinearShape& shape : decode_linears(m)) {
      const auto& [name, out_features, in] = shape;
      if (name == "lm_head") continue;
      RandomTensors random{backend};
      std::vector<std::shared_ptr<void>> keep;
      const std::vector<Tensor> bf16 = rotated_weights(random, shape);
      const size_t fp8_bytes = static_cast<size_t>(out_features * in);
      const int copies = static_cast<int>(std::max<size_t>(2, (kRotateBytes + fp8_bytes - 1) / fp8_bytes));
      std::vector<Fp8Weight> weights;
      for (int c = 0; c < copies; ++c) weights.push_back(quantized(backend, bf16[c % bf16.size()], keep));
      const int launches = std::max(kBatch, copies);
      const Fp8Rows x = quantized_rows(backend, random, 16, in, keep);
      const Tensor x16 = random.bf16({16, in}, 0.0f, 1.0f);
      Allocation out = backend.allocate(DType::kBF16, {16, out_features});
      auto pct = [&](double us, size_t bytes) { return 100 * (bytes / (us * 1e-6) / 1e9) / copy_gbps; };
      const bool picks_streamed = cuda::prefers_streamed_linear(out_features, in, backend.sm_count(), 1);
      for (int64_t rows_m : {1, 4, 16}) {
        const double direct = time_per_launch_us(backend, launches, [&](int i) {
          const Fp8Weight& w = weights[i % copies];
          cuda::launch_fp8_small_n_linear(x.values.as<const uint8_t>(), x.scales.as<const float>(),
                                          w.q.as<const uint8_t>(), w.scales.as<const float>(), nullptr,
                                          cuda::LinearOutputs::whole(out.tensor.data, out_features), rows_m, in,
                                          out_features, backend.sm_count(), backend.stream());
        });
        const double strm = time_per_launch_us(backend, launches, [&](int i) {
          const Fp8Weight& w = weights[i % copies];
          streamed.run_fp8(x.values.as<const uint8_t>(), x.scales.as<const float>(), w.q.as<const uint8_t>(),
                           w.scales.as<const float>(), nullptr,
                           cuda::LinearOutputs::whole(out.tensor.data, out_features), rows_m, in, out_features,
                           backend.stream());
        });
        const double ours = picks_streamed ? strm : direct;
        const double lt = time_per_launch_us(backend, launches, [&](int i) {
          const Fp8Weight& w = weights[i % copies];
          scaled_gemm(gemm, backend, x, w, out.tensor, rows_m, in, out_features);
        });
        const double b16 = time_per_launch_us(backend, std::max(kBatch, static_cast<int>(bf16.size())), [&](int i) {
          backend.linear_with(LinearPath::kSmallN, x16.rows(0, rows_m), bf16[i % bf16.size()], nullptr,
                              out.tensor.rows(0, rows_m));
        });
        fmt::print(
            "{:<14} {:<12} {:>7} {:>7} {:>3} | {:>8.2f}{} {:>4.0f}% | {:>8.2f}{} {:>4.0f}% | {:>8.2f} {:>4.0f}% | {:>8.2f} | "
            "{:>7.2f}x\n",
            m.name, name, out_features, in, rows_m, direct, picks_streamed ? ' ' : '*', pct(direct, fp8_bytes), strm,
            picks_streamed ? '*' : ' ', pct(strm, fp8_bytes), lt, pct(lt, fp8_bytes), b16, b16 / ours);
        rows.push_back({{"model", m.name}, {"matmul", name}, {"out", out_features}, {"in", in}, {"m", rows_m},
                        {"fp8_us", ours}, {"fp8_pct_of_copy", pct(ours, fp8_bytes)}, {"fp8_direct_us", direct},
                        {"fp8_streamed_us", strm}, {"fp8_picks_streamed", picks_streamed}, {"cublaslt_fp8_us", lt},
                        {"bf16_us", b16}, {"bf16_over_fp8", b16 / ours}});
      }
      backend.synchronize();
    }
  }
  return rows;
}

nlohmann::json bench_fp8_gemm_rows(CudaBackend& backend) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nFP8 matmuls past the decode rows (e4m3 x e4m3, scales per token row and per output channel, BF16 out):\n"
             "the engine's pick (by the rows' bucket), CUTLASS's Hopper FP8 GEMM with the scales in its epilogue, and\n"
             "cuBLASLt's FP8 GEMM followed by a scaling pass, against cuBLASLt's BF16 GEMM; Llama-3.1-8B matmuls,\n"
             "TFLOP/s (2 M N K / time); ratio: BF16's time over the engine's\n");
  fmt::print("{:<14} {:>6} {:>6} {:>5} | {:>9} {:>9} {:>9} {:>9} | {:>6}\n", "matmul", "out", "in", "M", "engine",
             "cutlass", "lt fp8", "bf16", "ratio");
  cuda::CublasLtLinear gemm;
  const ModelShape& m = model_shapes().back();
  for (const LinearShape& shape : decode_linears(m)) {
    const auto& [name, out_features, in] = shape;
    if (name != "qkv_proj" && name != "o_proj" && name != "gate_up_proj" && name != "down_proj") continue;
    RandomTensors random{backend};
    std::vector<std::shared_ptr<void>> keep;
    const Tensor w16 = random.bf16({out_features, in}, 0.0f, 1.0f / std::sqrt(static_cast<float>(in)));
    const Fp8Weight w8 = quantized(backend, w16, keep);
    constexpr int64_t kMaxRows = 8192;
    const Tensor x16 = random.bf16({kMaxRows, in}, 0.0f, 1.0f);
    const Fp8Rows x8 = quantized_rows(backend, random, kMaxRows, in, keep);
    Allocation out = backend.allocate(DType::kBF16, {kMaxRows, out_features});
    for (int64_t rows_m : {32, 128, 256, 512, 1024, 2048, 4096, 8192}) {
      const double flop = 2.0 * static_cast<double>(rows_m) * out_features * in;
      const Fp8Rows x_rows{x8.values.rows(0, rows_m), x8.scales.rows(0, rows_m)};
      const std::vector<Fp8LinearPart> part = {{&w8.q, &w8.scales, nullptr, out.tensor.rows(0, rows_m)}};
      const double fp8 = time_per_launch_us(backend, kBatch, [&](int) { backend.linear_fp8_group(x_rows, part); });
      const double cutlass = time_per_launch_us(backend, kBatch, [&](int) {
        cuda::launch_fp8_gemm_scaled(x8.values.as<const uint8_t>(), x8.scales.as<const float>(),
                                     w8.q.as<const uint8_t>(), w8.scales.as<const float>(), nullptr,
                                     static_cast<__nv_bfloat16*>(out.tensor.data), false, rows_m, in, out_features,
                                     backend.sm_count(), backend.stream());
      });
      const double lt = time_per_launch_us(backend, kBatch, [&](int) {
        scaled_gemm(gemm, backend, x8, w8, out.tensor, rows_m, in, out_features);
      });
      const double b16 = time_per_launch_us(backend, kBatch, [&](int) {
        gemm.run(x16.data, w16.data, nullptr, out.tensor.data, false, rows_m, in, out_features, {rows_m, rows_m},
                 backend.stream());
      });
      const auto tflops = [&](double us) { return flop / (us * 1e-6) / 1e12; };
      fmt::print("{:<14} {:>6} {:>6} {:>5} | {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} | {:>5.2f}x\n", name, out_features, in,
                 rows_m, tflops(fp8), tflops(cutlass), tflops(lt), tflops(b16), b16 / fp8);
      rows.push_back({{"matmul", name}, {"out", out_features}, {"in", in}, {"m", rows_m}, {"fp8_tflops", tflops(fp8)},
                      {"cutlass_fp8_tflops", tflops(cutlass)}, {"cublaslt_fp8_tflops", tflops(lt)},
                      {"bf16_tflops", tflops(b16)}, {"fp8_us", fp8}, {"cutlass_fp8_us", cutlass},
                      {"cublaslt_fp8_us", lt}, {"bf16_us", b16}});
    }
    backend.synchronize();
  }
  return rows;
}

}  // namespace fg::bench
