// model/quantization_config.cpp — reads quantization_config into fg::QuantizationConfig, or refuses it.
//
// Owns which quantization settings fullgraph runs and the refusal, naming the field and its
// value, of every other one. Both formats' objects are read with allow_only: a key this file does
// not know may change the arithmetic (a transform, a sparsity pattern), so it is refused rather
// than ignored; the known purely descriptive keys (observers, status, versions) are accepted.
#include "model/quantization_config.h"

#include <regex>

namespace fg {
namespace {

constexpr const char* kSupportedMethods = "compressed-tensors, fp8";

// A setting that must be absent or null: present, it would change the arithmetic.
void refuse_present(const JsonView& object, std::string_view key, std::string_view why) {
  if (const std::optional<JsonView> value = object.get_non_null(key)) {
    value->fail("{} is not supported ({}); only null is", value->describe(), why);
  }
}

// As refuse_present, but an empty object also means "none" (llm-compressor writes {}).
void refuse_non_empty(const JsonView& object, std::string_view key, std::string_view why) {
  const std::optional<JsonView> value = object.get_non_null(key);
  if (value && !(value->raw().is_object() && value->raw().empty())) {
    value->fail("{} is not supported ({}); only null or {{}} is", value->describe(), why);
  }
}

std::vector<std::string> string_list(const JsonView& object, std::string_view key) {
  std::vector<std::string> out;
  const std::optional<JsonView> list = object.get_non_null(key);
  if (!list) return out;
  for (size_t i = 0; i < list->size(); ++i) {
    const JsonView entry = list->item(i);
    const std::string& name = entry.as_string();
    if (name.starts_with("re:")) {
      try {
        std::regex pattern(name.substr(3));
      } catch (const std::regex_error& e) {
        entry.fail("'{}' is not a valid regular expression ({})", name, e.what());
      }
    }
    out.push_back(name);
  }
  return out;
}

// ---- compressed-tensors ---------------------------------------------------------------------

enum class Role { kWeights, kInputActivations };

// One QuantizationArgs object (weights or input_activations of a config group): 8-bit symmetric
// float, with a strategy that fullgraph implements for that role.
void parse_scheme(const JsonView& args, Role role, QuantizationConfig& out) {
  args.allow_only({"num_bits", "type", "strategy", "symmetric", "dynamic", "group_size", "block_structure",
                   "actorder", "observer", "observer_kwargs", "scale_dtype", "zp_dtype"});
  const JsonView bits = args.required_non_null("num_bits");
  if (bits.as_int() != 8) bits.fail("{} is not supported (FP8 checkpoints only: 8)", bits.describe());
  const JsonView type = args.required_non_null("type");
  if (type.as_string() != "float") {
    type.fail("'{}' is not supported (FP8 checkpoints only: float)", type.as_string());
  }
  if (const std::optional<JsonView> symmetric = args.get_non_null("symmetric"); symmetric && !symmetric->as_bool()) {
    symmetric->fail("false is not supported (asymmetric quantization; only symmetric is)");
  }
  refuse_present(args, "group_size", "group-wise scales");
  refuse_present(args, "block_structure", "block-wise scales");
  refuse_present(args, "actorder", "activation-ordered groups");

  const JsonView strategy = args.required_non_null("strategy");
  const std::string& name = strategy.as_string();
  const std::optional<JsonView> dynamic_view = args.get_non_null("dynamic");
  const bool dynamic = dynamic_view ? dynamic_view->as_bool() : false;
  if (role == Role::kWeights) {
    if (name == "channel") {
      out.weight_scale = WeightScaleGranularity::kPerChannel;
    } else if (name == "tensor") {
      out.weight_scale = WeightScaleGranularity::kPerTensor;
    } else {
      strategy.fail("'{}' is not supported for weights (supported: channel, tensor)", name);
    }
    if (dynamic) dynamic_view->fail("true is not supported for weights (their scales are in the checkpoint)");
    return;
  }
  if (name == "token") {
    if (!dynamic) args.fail("strategy 'token' with dynamic false is not supported (per-token scales are computed at run time: dynamic true)");
    out.activations = ActivationScheme::kDynamicPerToken;
  } else if (name == "tensor") {
    if (dynamic) args.fail("strategy 'tensor' with dynamic true is not supported (a per-tensor scale comes from the checkpoint: dynamic false)");
    out.activations = ActivationScheme::kStaticPerTensor;
  } else {
    strategy.fail("'{}' is not supported for input_activations (supported: token with dynamic true, tensor with dynamic false)", name);
  }
}

// A compressed-tensors QuantizationArgs for the KV cache: fp8 (8-bit float), one static scale
// per layer for keys and one for values, as llm-compressor writes them. Returns true (the
// checkpoint's scales are to be read).
bool parse_kv_cache_scheme(const JsonView& kv) {
  kv.require_object();
  kv.allow_only({"num_bits", "type", "strategy", "dynamic", "symmetric", "group_size", "block_structure", "actorder",
                 "observer", "observer_kwargs", "strategy_kwargs"});
  const JsonView bits = kv.required_non_null("num_bits");
  if (bits.as_int() != 8) bits.fail("{} is not supported (an FP8 KV cache: 8)", bits.describe());
  const JsonView type = kv.required_non_null("type");
  if (type.as_string() != "float") type.fail("'{}' is not supported (an FP8 KV cache: float)", type.as_string());
  const JsonView strategy = kv.required_non_null("strategy");
  if (strategy.as_string() != "tensor") {
    strategy.fail("'{}' is not supported (one scale per layer for keys and one for values: tensor)",
                  strategy.as_string());
  }
  if (const std::optional<JsonView> dynamic = kv.get_non_null("dynamic"); dynamic && dynamic->as_bool()) {
    dynamic->fail("{} is not supported (the scales come from the checkpoint: false)", dynamic->describe());
  }
  if (const std::optional<JsonView> symmetric = kv.get_non_null("symmetric"); symmetric && !symmetric->as_bool()) {
    symmetric->fail("{} is not supported (e4m3 with a scale and no zero point: true)", symmetric->describe());
  }
  refuse_present(kv, "group_size", "group-wise scales");
  refuse_present(kv, "block_structure", "block-wise scales");
  return true;
}

void parse_compressed_tensors(const JsonView& q, QuantizationConfig& out) {
  q.allow_only({"quant_method", "format", "config_groups", "ignore", "kv_cache_scheme", "sparsity_config",
                "transform_config", "quantization_status", "global_compression_ratio", "version", "provider"});
  const JsonView format = q.required_non_null("format");
  if (format.as_string() != "float-quantized" && format.as_string() != "naive-quantized") {
    format.fail("'{}' is not supported (supported: float-quantized, naive-quantized)", format.as_string());
  }
  if (const std::optional<JsonView> kv = q.get_non_null("kv_cache_scheme")) out.kv_cache_scales = parse_kv_cache_scheme(*kv);
  refuse_non_empty(q, "sparsity_config", "sparse weights");
  refuse_non_empty(q, "transform_config", "rotated weights");

  const JsonView groups = q.required_non_null("config_groups");
  groups.require_object();
  if (groups.raw().size() != 1) {
    groups.fail("has {} groups; fullgraph supports exactly one (one scheme for every linear)", groups.raw().size());
  }
  const auto& [group_name, group_value] = *groups.raw().items().begin();
  const JsonView group = groups.member(group_name, group_value);
  group.allow_only({"targets", "weights", "input_activations", "output_activations", "format"});
  const JsonView targets = group.required_non_null("targets");
  if (targets.raw() != nlohmann::json::array({"Linear"})) {
    targets.fail("{} is not supported (only [\"Linear\"]: every linear layer)", targets.describe());
  }
  if (const std::optional<JsonView> group_format = group.get_non_null("format");
      group_format && group_format->as_string() != format.as_string()) {
    group_format->fail("'{}' differs from format '{}'", group_format->as_string(), format.as_string());
  }
  refuse_present(group, "output_activations", "quantized outputs");
  parse_scheme(group.required_non_null("weights"), Role::kWeights, out);
  if (const std::optional<JsonView> input = group.get_non_null("input_activations")) {
    parse_scheme(*input, Role::kInputActivations, out);
  }
  out.ignore = string_list(q, "ignore");
}

// ---- vLLM's fp8 ---------------------------------------------------------------------------

void parse_fp8(const JsonView& q, QuantizationConfig& out) {
  q.allow_only({"quant_method", "activation_scheme", "fmt", "ignored_layers", "modules_to_not_convert",
                "weight_block_size", "kv_cache_scheme"});
  if (const std::optional<JsonView> fmt = q.get_non_null("fmt"); fmt && fmt->as_string() != "e4m3") {
    fmt->fail("'{}' is not supported (supported: e4m3)", fmt->as_string());
  }
  refuse_present(q, "weight_block_size", "block-wise weight scales");
  if (const std::optional<JsonView> kv = q.get_non_null("kv_cache_scheme")) {
    if (kv->raw().is_string()) {
      if (kv->as_string() != "static") kv->fail("'{}' is not supported (supported: static, per-layer k/v scales in the checkpoint)", kv->as_string());
      out.kv_cache_scales = true;
    } else {
      out.kv_cache_scales = parse_kv_cache_scheme(*kv);
    }
  }
  // vLLM's default when the key is absent.
  const std::optional<JsonView> scheme = q.get_non_null("activation_scheme");
  const std::string name = scheme ? scheme->as_string() : "dynamic";
  if (name == "dynamic") {
    out.activations = ActivationScheme::kDynamicPerToken;
  } else if (name == "static") {
    out.activations = ActivationScheme::kStaticPerTensor;
  } else {
    scheme->fail("'{}' is not supported (supported: dynamic, static)", name);
  }
  out.weight_scale = WeightScaleGranularity::kPerTensor;
  out.ignore = string_list(q, "ignored_layers");
  const std::vector<std::string> more = string_list(q, "modules_to_not_convert");
  out.ignore.insert(out.ignore.end(), more.begin(), more.end());
}

}  // namespace

bool QuantizationConfig::quantizes(const std::string& module) const {
  for (const std::string& entry : ignore) {
    if (entry.starts_with("re:")) {
      if (std::regex_match(module, std::regex(entry.substr(3)))) return false;
    } else if (module == entry || module.starts_with(entry + ".")) {
      return false;
    }
  }
  return true;
}

std::string_view activation_scheme_name(ActivationScheme scheme) {
  switch (scheme) {
    case ActivationScheme::kNone: return "unquantized";
    case ActivationScheme::kDynamicPerToken: return "dynamic per-token";
    case ActivationScheme::kStaticPerTensor: return "static per-tensor";
  }
  return "?";
}

std::optional<QuantizationConfig> parse_quantization_config(const JsonView& root) {
  const std::optional<JsonView> modern = root.get_non_null("quantization_config");
  const std::optional<JsonView> legacy = root.get_non_null("compression_config");
  if (modern && legacy) {
    root.fail("quantization_config and compression_config are both present; give one");
  }
  if (!modern && !legacy) return std::nullopt;
  const JsonView q = modern ? *modern : *legacy;
  q.require_object();
  // compressed-tensors' older compression_config has no quant_method: it is the only writer.
  const std::optional<JsonView> method_view = q.get_non_null("quant_method");
  const std::string method = method_view ? method_view->as_string() : legacy ? "compressed-tensors" : "";
  if (!method_view && !legacy) q.fail("quant_method is missing (supported: {})", kSupportedMethods);

  QuantizationConfig out;
  out.method = method;
  if (method == "compressed-tensors") {
    parse_compressed_tensors(q, out);
  } else if (method == "fp8") {
    parse_fp8(q, out);
  } else {
    method_view->fail("'{}' is not supported (supported: {})", method, kSupportedMethods);
  }
  return out;
}

QuantizationConfig quantize_at_load_config() {
  QuantizationConfig q;
  q.method = "fp8 (quantized at load)";
  q.weight_scale = WeightScaleGranularity::kPerChannel;
  q.activations = ActivationScheme::kDynamicPerToken;
  q.quantize_at_load = true;
  return q;
}

}  // namespace fg
