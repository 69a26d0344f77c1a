// backend/cuda/cuda_fp8.cpp — CudaBackend's FP8 ops: argument checks, then the kernels of
// fp8_kernels.h, cuBLASLt's FP8 GEMM or CUTLASS's (fp8_gemm_cutlass.h) by the bucket rule (as the
// BF16 linears: a pure function of n and the configured buckets, so graph and eager runs of n rows
// take the same path).
#include <algorithm>
#include <climits>
#include <cmath>

#include "backend/cuda/cublaslt_linear.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/fp8_gemm_cutlass.h"
#include "backend/cuda/fp8_kernels.h"
#include "backend/cuda/norm_kernels.h"
#include "backend/cuda/streamed_linear.h"
#include "core/cuda/tensor_checks.h"

namespace fg {

namespace {

// The kernels move 16 e4m3 values at a time.
constexpr int64_t kFp8Width = 16;

void check_fp8_rows(const Fp8Rows& x, const char* op) {
  cuda::require(x.values, DType::kF8E4M3, "FP8 input values");
  cuda::require(x.scales, DType::kF32, "FP8 input scales");
  FG_CHECK(x.values.rank == 2 && x.scales.same_shape({x.values.dim(0)}),
           "cuda backend: {}: FP8 rows {} with scales {}", op, x.values.shape_string(), x.scales.shape_string());
  FG_CHECK(x.values.dim(1) % kFp8Width == 0 && x.values.dim(1) <= INT32_MAX,
           "cuda backend: {}: FP8 rows must be a multiple of {} wide, got {}", op, kFp8Width, x.values.dim(1));
  cuda::require_aligned16(x.values, "FP8 input values");
}

void check_fp8_part(const Fp8Rows& x, const Fp8LinearPart& p) {
  const Tensor& w = *p.weight;
  cuda::require(w, DType::kF8E4M3, "FP8 linear weight");
  FG_CHECK(w.rank == 2 && w.dim(1) == x.values.dim(1), "cuda backend: FP8 linear weight {} for input rows {}",
           w.shape_string(), x.values.shape_string());
  FG_CHECK(w.dim(0) <= INT32_MAX, "cuda backend: FP8 linear weight {} is too large", w.shape_string());
  cuda::require(*p.scale, DType::kF32, "FP8 linear weight scales");
  FG_CHECK(p.scale->same_shape({w.dim(0)}), "cuda backend: FP8 weight scales {} for weight {}",
           p.scale->shape_string(), w.shape_string());
  if (p.bias != nullptr && p.bias->data != nullptr) {
    cuda::require(*p.bias, DType::kBF16, "FP8 linear bias");
    FG_CHECK(p.bias->numel() == w.dim(0), "cuda backend: FP8 linear bias {} for {} outputs", p.bias->shape_string(),
             w.dim(0));
  }
  cuda::require(p.out, DType::kBF16, "FP8 linear output");
  FG_CHECK(p.out.same_shape({x.values.dim(0), w.dim(0)}), "cuda backend: FP8 linear of rows {} with weight {} into {}",
           x.values.shape_string(), w.shape_string(), p.out.shape_string());
  cuda::require_aligned16(w, "FP8 linear weight");
  cuda::require_aligned16(p.out, "FP8 linear output");
}

const void* bias_data(const Fp8LinearPart& p) { return p.bias != nullptr ? p.bias->data : nullptr; }

// Past the small-n rows, which FP8 GEMM: CUTLASS's (the scales in its epilogue) for buckets that
// reach 512 rows, cuBLASLt's followed by the scaling pass for smaller ones. On an H100
// (bench/RESULTS.md, 2026-12-07, the 8B's four matmuls) CUTLASS's ran 1,080-1,320 TFLOP/s at
// 512-8192 rows against 740-1,100 for cuBLASLt + pass, but 300-450 against 460-570 at 128 rows and
// 70-120 against 140-180 at 32. A function of the bucket, not of n, so that graph and eager runs
// of n rows take the same GEMM.
constexpr int64_t kCutlassFp8GemmMinRows = 512;
bool runs_cutlass_fp8_gemm(const SizeBuckets& buckets, int64_t n) {
  return buckets.of(n).hi >= kCutlassFp8GemmMinRows;
}

// The FP8 GEMM's epilogue (fp8_gemm_cutlass.h) reads the scales and the bias and stores the output
// 16 bytes at a time.
void require_fp8_gemm_operands(const Fp8Rows& x, const Fp8LinearPart& p, const char* op) {
  FG_CHECK(p.weight->dim(0) % 8 == 0, "cuda backend: {}: the FP8 GEMM takes outputs in multiples of 8, got {}", op,
           p.weight->dim(0));
  cuda::require_aligned16(x.scales, "FP8 input scales");
  cuda::require_aligned16(*p.scale, "FP8 linear weight scales");
  if (bias_data(p) != nullptr) cuda::require_aligned16(*p.bias, "FP8 linear bias");
}

// Whether the parts run as one launch: weights, scales and biases (all or none) back to back.
bool fp8_fusable(const std::vector<Fp8LinearPart>& parts) {
  if (parts.empty() || parts.size() > static_cast<size_t>(cuda::LinearOutputs::kMaxParts)) return false;
  const bool biased = bias_data(parts[0]) != nullptr;
  for (size_t i = 1; i < parts.size(); ++i) {
    const Fp8LinearPart &before = parts[i - 1], &part = parts[i];
    if (!cuda::follows(*before.weight, *part.weight) || !cuda::follows(*before.scale, *part.scale)) return false;
    if ((bias_data(part) != nullptr) != biased || (biased && !cuda::follows(*before.bias, *part.bias))) return false;
  }
  return true;
}

void check_static_scale(float static_scale) {
  FG_CHECK(std::isfinite(static_scale) && static_scale >= 0.0f,
           "cuda backend: a static FP8 input scale must be positive and finite (0: a scale per row), got {}",
           static_scale);
}

cuda::Fp8RowsView rows_view(const Fp8Rows& x) { return {x.values.as<uint8_t>(), x.scales.as<float>()}; }

}  // namespace

void CudaBackend::quantize_fp8(const Tensor& x, float static_scale, const Fp8Rows& out) {
  cuda::require(x, DType::kBF16, "quantize_fp8 input");
  check_fp8_rows(out, "quantize_fp8");
  FG_CHECK(out.values.same_shape({x.rank == 2 ? x.dim(0) : -1, x.rank == 2 ? x.dim(1) : -1}),
           "cuda backend: quantize_fp8 of {} into {}", x.shape_string(), out.values.shape_string());
  cuda::require_aligned16(x, "quantize_fp8 input");
  check_static_scale(static_scale);
  cuda::launch_quantize_fp8_rows(cuda::bf16_ptr(x), static_scale, rows_view(out), x.dim(0), x.dim(1), stream_);
}

void CudaBackend::rms_norm_quantize_fp8(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                                        float static_scale, const Fp8Rows& out) {
  (void)normed;  // scratch of the default steps: the kernel quantizes the normalized rows in registers
  cuda::require(x, DType::kBF16, "rms_norm_quantize_fp8 input");
  cuda::require(norm_weight, DType::kBF16, "rms_norm_quantize_fp8 norm weight");
  check_fp8_rows(out, "rms_norm_quantize_fp8");
  FG_CHECK(x.rank == 2 && norm_weight.same_shape({x.dim(1)}) && out.values.same_shape({x.dim(0), x.dim(1)}),
           "cuda backend: rms_norm_quantize_fp8 of {} with norm weight {} into {}", x.shape_string(),
           norm_weight.shape_string(), out.values.shape_string());
  FG_CHECK(x.dim(1) <= cuda::kMaxNormHidden, "cuda backend: rms_norm_quantize_fp8 takes rows of at most {}, got {}",
           cuda::kMaxNormHidden, x.dim(1));
  cuda::require_aligned16(x, "rms_norm_quantize_fp8 input");
  cuda::require_aligned16(norm_weight, "rms_norm_quantize_fp8 norm weight");
  check_static_scale(static_scale);
  cuda::launch_rms_norm_quantize_fp8(cuda::bf16_ptr(x), cuda::bf16_ptr(norm_weight), eps, static_scale,
                                     rows_view(out), x.dim(0), x.dim(1), stream_);
}

void CudaBackend::silu_mul_quantize_fp8(const Tensor& gate, const Tensor& up, const Tensor& act, float static_scale,
                                        const Fp8Rows& out) {
  (void)act;  // scratch of the default steps
  cuda::require(gate, DType::kBF16, "silu_mul_quantize_fp8 gate");
  cuda::require(up, DType::kBF16, "silu_mul_quantize_fp8 up");
  check_fp8_rows(out, "silu_mul_quantize_fp8");
  FG_CHECK(gate.rank == 2 && up.same_shape({gate.dim(0), gate.dim(1)}) &&
               out.values.same_shape({gate.dim(0), gate.dim(1)}),
           "cuda backend: silu_mul_quantize_fp8 of gate {} and up {} into {}", gate.shape_string(), up.shape_string(),
           out.values.shape_string());
  cuda::require_aligned16(gate, "silu_mul_quantize_fp8 gate");
  cuda::require_aligned16(up, "silu_mul_quantize_fp8 up");
  check_static_scale(static_scale);
  cuda::launch_silu_mul_quantize_fp8(cuda::bf16_ptr(gate), cuda::bf16_ptr(up), gate.dim(1), static_scale,
                                     rows_view(out), gate.dim(0), gate.dim(1), stream_);
}

void CudaBackend::run_fp8_small_n(const Fp8Rows& x, const void* weight, const void* scales, const void* bias,
                                  const cuda::LinearOutputs& out, int64_t out_features) {
  const int64_t n = x.values.dim(0), in = x.values.dim(1);
  // Weights of many rows or 32 MB and more take the streamed FP8 kernel, the rest the direct one
  // (streamed_linear.h). A function of the shape and the device, so graph and eager runs of any n
  // take the same kernel.
  const bool streamed = cuda::prefers_streamed_linear(out_features, in, sm_count_, 1);
  const auto* w8 = static_cast<const uint8_t*>(weight);
  const auto* w_scales = static_cast<const float*>(scales);
  const auto* b16 = static_cast<const __nv_bfloat16*>(bias);
  // One launch where n is a small-n row count; batch-invariant steps of any n in groups of 16 rows
  // (a row's arithmetic depends on the weight's shape alone).
  for (int64_t r = 0; r < n; r += cuda::kFp8SmallNMaxRows) {
    const uint8_t* rows = x.values.as<const uint8_t>() + r * in;
    const float* row_scales = x.scales.as<const float>() + r;
    const int64_t count = std::min(cuda::kFp8SmallNMaxRows, n - r);
    if (streamed)
      streamed_->run_fp8(rows, row_scales, w8, w_scales, b16, out.from_row(r, 2), count, in, out_features, stream_);
    else
      cuda::launch_fp8_small_n_linear(rows, row_scales, w8, w_scales, b16, out.from_row(r, 2), count, in,
                                      out_features, sm_count_, stream_);
  }
}

void CudaBackend::linear_fp8_group(const Fp8Rows& x, const std::vector<Fp8LinearPart>& parts) {
  check_fp8_rows(x, "linear_fp8_group");
  for (const Fp8LinearPart& p : parts) check_fp8_part(x, p);
  const int64_t n = x.values.dim(0), in = x.values.dim(1);
  if (n == 0 || parts.empty()) return;
  if (runs_cublaslt(LinearPath::kAuto, n)) {
    const bool cutlass = runs_cutlass_fp8_gemm(buckets_, n);
    for (const Fp8LinearPart& p : parts) {
      const int64_t rows = p.weight->dim(0);
      if (cutlass) {  // each part scaled in the GEMM's epilogue
        require_fp8_gemm_operands(x, p, "linear_fp8_group");
        cuda::launch_fp8_gemm_scaled(x.values.as<const uint8_t>(), x.scales.as<const float>(),
                                     p.weight->as<const uint8_t>(), p.scale->as<const float>(),
                                     static_cast<const __nv_bfloat16*>(bias_data(p)), cuda::bf16_ptr(p.out), false, n,
                                     in, rows, sm_count_, stream_);
        continue;
      }
      // The unscaled sums into the part's own output, then scaled there.
      gemm_->run_fp8(x.values.data, p.weight->data, p.out.data, n, in, rows, buckets_.of(n), stream_);
      cuda::launch_fp8_scale_outputs(cuda::bf16_ptr(p.out), x.scales.as<const float>(), p.scale->as<const float>(),
                                     static_cast<const __nv_bfloat16*>(bias_data(p)),
                                     cuda::LinearOutputs::whole(p.out.data, rows), n, rows, stream_);
    }
    return;
  }
  if (fp8_fusable(parts)) {
    int64_t rows = 0;
    const cuda::LinearOutputs outputs = cuda::LinearOutputs::columns_of(parts, rows);
    run_fp8_small_n(x, parts[0].weight->data, parts[0].scale->data, bias_data(parts[0]), outputs, rows);
    return;
  }
  for (const Fp8LinearPart& p : parts) {
    const int64_t rows = p.weight->dim(0);
    run_fp8_small_n(x, p.weight->data, p.scale->data, bias_data(p), cuda::LinearOutputs::whole(p.out.data, rows), rows);
  }
}

void CudaBackend::linear_fp8_qkv_rope_cache_write(const Fp8Rows& x, const std::vector<Fp8LinearPart>& qkv,
                                                  const Tensor& positions, const Tensor& slot_mapping,
                                                  const Tensor& rope_cos_sin, const KvCacheLayer& cache) {
  check_fp8_rows(x, "linear_fp8_qkv_rope_cache_write");
  for (const Fp8LinearPart& p : qkv) check_fp8_part(x, p);
  const int64_t n = x.values.dim(0), in = x.values.dim(1);
  int64_t rows = 0;
  for (const Fp8LinearPart& p : qkv) rows += p.weight->dim(0);
  // One streamed launch where the span streams unsplit (at one byte per value), at decode rows (not
  // batch invariant), with a BF16 cache (the fused stores write BF16); else the linear, then the
  // RoPE kernel.
  const bool fused = qkv.size() == 3 && fuses_small_n(n) && fp8_fusable(qkv) && cache.k.dtype == DType::kBF16 &&
                     positions.rank == 1 && qkv[0].out.rank == 2 && qkv[1].out.rank == 2 &&
                     cuda::qkv_rope_streamed_applies(rows, in, rope_cos_sin.rank == 2 ? rope_cos_sin.dim(1) : 0,
                                                     sm_count_, 1);
  if (!fused) {
    Backend::linear_fp8_qkv_rope_cache_write(x, qkv, positions, slot_mapping, rope_cos_sin, cache);
    return;
  }
  const RopeShape r =
      check_rope_inputs(qkv[0].out, qkv[1].out, qkv[2].out, positions, slot_mapping, rope_cos_sin, cache);
  const cuda::QkvRope rope = qkv_rope(r, positions, slot_mapping, rope_cos_sin, cache);
  if (n == 0) return;
  const cuda::LinearOutputs outputs = cuda::LinearOutputs::columns_of(qkv, rows);
  streamed_->run_qkv_rope_fp8(x.values.as<const uint8_t>(), x.scales.as<const float>(),
                              qkv[0].weight->as<const uint8_t>(), qkv[0].scale->as<const float>(),
                              static_cast<const __nv_bfloat16*>(bias_data(qkv[0])), outputs, rope, n, in, rows,
                              stream_);
}

void CudaBackend::linear_fp8_silu_mul_quantize(const Fp8Rows& x, const Fp8LinearPart& gate, const Fp8LinearPart& up,
                                               const Tensor& act, float static_scale, const Fp8Rows& out) {
  check_fp8_rows(x, "linear_fp8_silu_mul_quantize");
  check_fp8_part(x, gate);
  check_fp8_part(x, up);
  const int64_t n = x.values.dim(0), in = x.values.dim(1), intermediate = gate.weight->dim(0);
  // One streamed launch (the gated kernel) where the span streams unsplit at decode rows (not
  // batch invariant), as the BF16 gated path; else the linears, then the fused SiLU quantizer.
  const bool gated = fuses_small_n(n) && up.weight->dim(0) == intermediate && fp8_fusable({gate, up}) &&
                     bias_data(gate) == nullptr && cuda::gated_linear_applies(intermediate, in, sm_count_, 1);
  if (!gated) {
    Backend::linear_fp8_silu_mul_quantize(x, gate, up, act, static_scale, out);
    return;
  }
  cuda::require(act, DType::kBF16, "linear_fp8_silu_mul_quantize activation");
  FG_CHECK(act.same_shape({n, intermediate}), "cuda backend: linear_fp8_silu_mul_quantize of {} rows into {}",
           n, act.shape_string());
  cuda::require_aligned16(act, "linear_fp8_silu_mul_quantize activation");
  if (n == 0) return;
  streamed_->run_gated_fp8(x.values.as<const uint8_t>(), x.scales.as<const float>(), gate.weight->as<const uint8_t>(),
                           gate.scale->as<const float>(), cuda::bf16_ptr(act), n, in, intermediate, stream_);
  quantize_fp8(act, static_scale, out);
}

void CudaBackend::linear_fp8_residual_add(const Fp8Rows& x, const Tensor& weight, const Tensor& scale,
                                          const Tensor& out, const Tensor& residual) {
  check_fp8_rows(x, "linear_fp8_residual_add");
  check_fp8_part(x, {&weight, &scale, nullptr, residual});
  const int64_t n = x.values.dim(0), in = x.values.dim(1);
  if (n == 0) return;
  cuda::LinearOutputs outputs = cuda::LinearOutputs::whole(residual.data, weight.dim(0));
  outputs.add_to_output = true;
  if (runs_cublaslt(LinearPath::kAuto, n)) {
    if (runs_cutlass_fp8_gemm(buckets_, n)) {  // scaled and added in the GEMM's epilogue; `out` unused
      require_fp8_gemm_operands(x, {&weight, &scale, nullptr, residual}, "linear_fp8_residual_add");
      cuda::launch_fp8_gemm_scaled(x.values.as<const uint8_t>(), x.scales.as<const float>(),
                                   weight.as<const uint8_t>(), scale.as<const float>(), nullptr,
                                   cuda::bf16_ptr(residual), true, n, in, weight.dim(0), sm_count_, stream_);
      return;
    }
    // The unscaled sums into the scratch `out`, then scaled and added to the residual stream.
    cuda::require(out, DType::kBF16, "linear_fp8_residual_add scratch");
    FG_CHECK(out.same_shape({n, weight.dim(0)}), "cuda backend: linear_fp8_residual_add scratch {} for {} rows of {}",
             out.shape_string(), n, weight.dim(0));
    gemm_->run_fp8(x.values.data, weight.data, out.data, n, in, weight.dim(0), buckets_.of(n), stream_);
    cuda::launch_fp8_scale_outputs(cuda::bf16_ptr(out), x.scales.as<const float>(), scale.as<const float>(), nullptr,
                                   outputs, n, weight.dim(0), stream_);
    return;
  }
  run_fp8_small_n(x, weight.data, scale.data, nullptr, outputs, weight.dim(0));
}

void CudaBackend::quantize_weight_fp8(const Tensor& w, const Tensor& q, const Tensor& scales) {
  cuda::require(w, DType::kBF16, "quantize_weight_fp8 weight");
  cuda::require(q, DType::kF8E4M3, "quantize_weight_fp8 output");
  cuda::require(scales, DType::kF32, "quantize_weight_fp8 scales");
  FG_CHECK(w.rank == 2 && q.same_shape({w.dim(0), w.dim(1)}) && scales.same_shape({w.dim(0)}),
           "cuda backend: quantize_weight_fp8 of {} into {} with scales {}", w.shape_string(), q.shape_string(),
           scales.shape_string());
  FG_CHECK(w.dim(1) % kFp8Width == 0, "cuda backend: FP8 weights must be a multiple of {} wide, got {}", kFp8Width,
           w.shape_string());
  cuda::require_aligned16(w, "quantize_weight_fp8 weight");
  cuda::require_aligned16(q, "quantize_weight_fp8 output");
  cuda::launch_quantize_weight_fp8(cuda::bf16_ptr(w), q.as<uint8_t>(), scales.as<float>(), w.dim(0), w.dim(1),
                                   stream_);
}

}  // namespace fg
