// backend/cpu/cpu_fp8.cpp — the CPU reference of the FP8 ops: activation rows rounded to e4m3,
// the FP8 linear, and per-channel weight quantization.
//
// The rounding is torch's arithmetic step for step, so that the reference fixtures' wrapped
// linears (scripts/fp8/make_fp8_fixtures.py) and this backend round every element to the same
// e4m3 value: s = amax / 448 in fp32, x / s in fp32, clamp, round to nearest even. The linear
// dequantizes both sides (e4m3 * scale, one fp32 product each) and takes the usual fp32 dot
// product: the arithmetic of transformers' linear over the dequantized weight and the rounded
// input, which is what the fixtures' references run.
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_math.h"

namespace fg {
namespace {

float row_scale(const float* row, int64_t width, float static_scale) {
  if (static_scale > 0.0f) return static_scale;
  float amax = 0.0f;
  for (int64_t j = 0; j < width; ++j) amax = std::fmax(amax, std::fabs(row[j]));
  const float scale = amax / kE4M3Max;
  return scale == 0.0f ? 1.0f : scale;
}

void quantize_row(const float* row, int64_t width, float scale, uint8_t* out) {
  for (int64_t j = 0; j < width; ++j) out[j] = float_to_e4m3(std::fmin(std::fmax(row[j] / scale, -kE4M3Max), kE4M3Max));
}

void require_fp8_rows(const Fp8Rows& x, int64_t n, int64_t width, const char* op) {
  FG_CHECK(x.values.dtype == DType::kF8E4M3 && x.values.same_shape({n, width}), "{}: FP8 values must be F8_E4M3 "
           "[{}, {}], got {} {}", op, n, width, dtype_name(x.values.dtype), x.values.shape_string());
  FG_CHECK(x.scales.dtype == DType::kF32 && x.scales.same_shape({n}), "{}: FP8 row scales must be F32 [{}], got "
           "{} {}", op, n, dtype_name(x.scales.dtype), x.scales.shape_string());
}

}  // namespace

void CpuBackend::quantize_fp8_now(const Tensor& x, float static_scale, const Fp8Rows& out) {
  cpu::require_f32(x, "quantize_fp8 input");
  FG_CHECK(x.rank == 2, "quantize_fp8: input must be [n, width], got {}", x.shape_string());
  const int64_t n = x.dim(0), width = x.dim(1);
  require_fp8_rows(out, n, width, "quantize_fp8");
  FG_CHECK(std::isfinite(static_scale) && static_scale >= 0.0f,
           "quantize_fp8: a static input scale must be positive and finite (0: a scale per row), got {}", static_scale);
  pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* row = x.as<const float>() + i * width;
      const float scale = row_scale(row, width, static_scale);
      out.scales.as<float>()[i] = scale;
      quantize_row(row, width, scale, out.values.as<uint8_t>() + i * width);
    }
  });
}

void CpuBackend::linear_fp8_now(const Fp8Rows& x, const Tensor& weight, const Tensor& scale, const Tensor& bias,
                                const Tensor& out) {
  FG_CHECK(weight.dtype == DType::kF8E4M3 && weight.rank == 2, "linear_fp8: weight must be F8_E4M3 [out, in], got "
           "{} {}", dtype_name(weight.dtype), weight.shape_string());
  const int64_t out_features = weight.dim(0), in = weight.dim(1), n = x.values.rank == 2 ? x.values.dim(0) : -1;
  require_fp8_rows(x, n, in, "linear_fp8");
  FG_CHECK(scale.dtype == DType::kF32 && scale.same_shape({out_features}), "linear_fp8: weight scales must be F32 "
           "[{}], got {} {}", out_features, dtype_name(scale.dtype), scale.shape_string());
  cpu::require_f32(out, "linear_fp8 output");
  FG_CHECK(out.same_shape({n, out_features}), "linear_fp8: output {} is not [{}, {}]", out.shape_string(), n,
           out_features);
  const bool has_bias = bias.data != nullptr;
  if (has_bias) FG_ASSERT(bias.numel() == out_features);
  if (n == 0) return;

  std::vector<float> inputs(static_cast<size_t>(n * in));  // the rounded rows, dequantized
  for (int64_t i = 0; i < n; ++i) {
    const float s = x.scales.as<const float>()[i];
    for (int64_t k = 0; k < in; ++k) inputs[i * in + k] = e4m3_to_float(x.values.as<const uint8_t>()[i * in + k]) * s;
  }
  pool_.parallel_for(out_features, [&](int64_t begin, int64_t end) {
    std::vector<float> row(in);
    float b = 0.0f;
    for (int64_t j = begin; j < end; ++j) {
      const float s = scale.as<const float>()[j];
      for (int64_t k = 0; k < in; ++k) row[k] = e4m3_to_float(weight.as<const uint8_t>()[j * in + k]) * s;
      if (has_bias) cpu::load_floats(bias, j, 1, &b);
      for (int64_t i = 0; i < n; ++i) {
        const float acc = cpu::dot(inputs.data() + i * in, row.data(), in);
        out.as<float>()[i * out_features + j] = has_bias ? acc + b : acc;
      }
    }
  });
}

void CpuBackend::quantize_weight_fp8_now(const Tensor& w, const Tensor& q, const Tensor& scales) {
  FG_CHECK(w.rank == 2, "quantize_weight_fp8: weight must be [out, in], got {}", w.shape_string());
  const int64_t out_features = w.dim(0), in = w.dim(1);
  FG_CHECK(q.dtype == DType::kF8E4M3 && q.same_shape({out_features, in}), "quantize_weight_fp8: output must be "
           "F8_E4M3 {}, got {} {}", w.shape_string(), dtype_name(q.dtype), q.shape_string());
  FG_CHECK(scales.dtype == DType::kF32 && scales.same_shape({out_features}), "quantize_weight_fp8: scales must be "
           "F32 [{}], got {} {}", out_features, dtype_name(scales.dtype), scales.shape_string());
  pool_.parallel_for(out_features, [&](int64_t begin, int64_t end) {
    std::vector<float> row(in);
    for (int64_t j = begin; j < end; ++j) {
      cpu::load_floats(w, j * in, in, row.data());
      const float scale = row_scale(row.data(), in, 0.0f);
      scales.as<float>()[j] = scale;
      quantize_row(row.data(), in, scale, q.as<uint8_t>() + j * in);
    }
  });
}

}  // namespace fg
