// model/fp8_weights.cpp — reading and dequantizing the quantized linears of FP8 checkpoints.
#include "model/fp8_weights.h"

#include <fmt/format.h>

#include <cmath>

#include "model/safetensors.h"

namespace fg {
namespace {

std::string shape_string(const Tensor& t) {
  return fmt::format("[{}]", fmt::join(std::vector<int64_t>(t.shape.begin(), t.shape.begin() + t.rank), ", "));
}

// Scale values as fp32: BF16 and F16 widen exactly, so the product below rounds once.
std::vector<float> scale_values(const Checkpoint& checkpoint, const std::string& name, const Tensor& t) {
  FG_CHECK(t.dtype == DType::kBF16 || t.dtype == DType::kF16 || t.dtype == DType::kF32,
           "{}: tensor '{}' has dtype {}; scales must be BF16, F16 or F32", checkpoint.dir(), name,
           dtype_name(t.dtype));
  std::vector<float> values(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const auto* bytes = static_cast<const char*>(t.data);
    if (t.dtype == DType::kF32) {
      std::memcpy(&values[i], bytes + 4 * i, 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, bytes + 2 * i, 2);
      values[i] = t.dtype == DType::kBF16 ? bf16_to_float(bits) : f16_to_float(bits);
    }
    FG_CHECK(std::isfinite(values[i]) && values[i] >= 0.0f, "{}: tensor '{}' holds {} at element {}; scales must "
             "be finite and non-negative", checkpoint.dir(), name, values[i], i);
  }
  return values;
}

bool is_scalar(const Tensor& t) { return t.rank == 0 || (t.rank == 1 && t.dim(0) == 1); }

Tensor required(const Checkpoint& checkpoint, const std::string& name, const std::string& why) {
  FG_CHECK(checkpoint.contains(name), "{}: missing tensor '{}' ({})", checkpoint.dir(), name, why);
  return checkpoint.tensor(name);
}

}  // namespace

std::optional<std::string> quantizable_linear(const std::string& weight_name) {
  static const char* const kSuffixes[] = {
      ".self_attn.q_proj.weight", ".self_attn.k_proj.weight", ".self_attn.v_proj.weight",
      ".self_attn.o_proj.weight", ".mlp.gate_proj.weight",    ".mlp.up_proj.weight",
      ".mlp.down_proj.weight"};
  for (const char* suffix : kSuffixes) {
    if (weight_name.ends_with(suffix)) return weight_name.substr(0, weight_name.size() - std::string(".weight").size());
  }
  return std::nullopt;
}

Fp8Linear read_fp8_linear(const Checkpoint& checkpoint, const WeightSpec& spec, const QuantizationConfig& quant) {
  const std::string module = *quantizable_linear(spec.name);
  const std::string& dir = checkpoint.dir();
  const int64_t rows = spec.shape[0], cols = spec.shape[1];
  Fp8Linear out;

  const Tensor weight = required(checkpoint, spec.name, fmt::format("shape [{}, {}] expected from config.json", rows, cols));
  FG_CHECK(weight.dtype == DType::kF8E4M3,
           "{}: tensor '{}' has dtype {} but config.json's quantization_config ({}) quantizes {}: F8_E4M3 "
           "expected (list it in the ignore list if it was left unquantized)",
           dir, spec.name, dtype_name(weight.dtype), quant.method, module);
  FG_CHECK(weight.rank == 2 && weight.dim(0) == rows && weight.dim(1) == cols,
           "{}: tensor '{}' has shape {} but config.json implies [{}, {}]", dir, spec.name, shape_string(weight),
           rows, cols);
  out.consumed.push_back(spec.name);

  const std::string scale_name = module + ".weight_scale";
  const Tensor scale = required(checkpoint, scale_name, fmt::format("the scale of the F8_E4M3 weight '{}'", spec.name));
  const bool per_channel = quant.weight_scale == WeightScaleGranularity::kPerChannel;
  if (per_channel) {
    FG_CHECK(scale.rank == 2 && scale.dim(0) == rows && scale.dim(1) == 1,
             "{}: tensor '{}' has shape {} but per-channel weight scales (quantization_config strategy 'channel') "
             "are [{}, 1]", dir, scale_name, shape_string(scale), rows);
  } else {
    FG_CHECK(is_scalar(scale), "{}: tensor '{}' has shape {} but per-tensor weight scales ({}) are [] or [1]", dir,
             scale_name, shape_string(scale),
             quant.method == "fp8" ? "quant_method 'fp8'" : "quantization_config strategy 'tensor'");
  }
  const std::vector<float> scales = scale_values(checkpoint, scale_name, scale);
  out.consumed.push_back(scale_name);

  if (quant.activations == ActivationScheme::kStaticPerTensor) {
    const std::string input_name = module + ".input_scale";
    const Tensor input = required(checkpoint, input_name, "static activation scales: quantization_config asks for them");
    FG_CHECK(is_scalar(input), "{}: tensor '{}' has shape {}; an input scale is [] or [1]", dir, input_name,
             shape_string(input));
    const float value = scale_values(checkpoint, input_name, input)[0];
    FG_CHECK(value > 0.0f, "{}: tensor '{}' is 0; an input scale divides the input, so it must be positive", dir,
             input_name);
    out.input_scale = value;
    out.consumed.push_back(input_name);
  }

  out.weight = static_cast<const uint8_t*>(weight.data);
  out.channel_scales = per_channel ? scales : std::vector<float>(static_cast<size_t>(rows), scales[0]);
  return out;
}

std::vector<std::string> read_kv_cache_scales(const Checkpoint& checkpoint, int64_t layer, LayerWeights& out) {
  std::vector<std::string> names;
  for (auto [which, slot] : {std::pair{"k_scale", &out.k_cache_scale}, {"v_scale", &out.v_cache_scale}}) {
    const std::string name = fmt::format("model.layers.{}.self_attn.{}", layer, which);
    const Tensor t = required(checkpoint, name, "the KV-cache scales quantization_config's kv_cache_scheme asks for");
    FG_CHECK(is_scalar(t), "{}: tensor '{}' has shape {}; a KV-cache scale is [] or [1]", checkpoint.dir(), name,
             shape_string(t));
    const float value = scale_values(checkpoint, name, t)[0];
    FG_CHECK(value > 0.0f && std::isfinite(value),
             "{}: tensor '{}' is {}; a KV-cache scale divides the keys or values, so it must be positive", checkpoint.dir(),
             name, value);
    *slot = value;
    names.push_back(name);
  }
  return names;
}

HostBuffer dequantize_fp8_linear(const Fp8Linear& linear, int64_t rows, int64_t cols, ThreadPool& pool) {
  HostBuffer out(static_cast<size_t>(rows * cols) * sizeof(float));
  auto* dst = reinterpret_cast<float*>(out.data());
  pool.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float s = linear.channel_scales[static_cast<size_t>(r)];
      for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = e4m3_to_float(linear.weight[r * cols + c]) * s;
    }
  });
  return out;
}

}  // namespace fg
