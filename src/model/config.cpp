// model/config.cpp — turns a Hugging Face config.json into fg::ModelConfig, or refuses it.
//
// Owns: which fields fullgraph reads, of what type and range (core/json reads and parses the
// file strictly; its JsonView names the field in every type error), Hugging Face's defaults for
// absent fields, both spellings of the RoPE settings (the Hub's rope_theta + rope_scaling and
// transformers 5's rope_parameters), and the refusal of every feature the engine does not
// implement (sliding windows, mixtures of experts, other activations and RoPE types;
// model/quantization_config reads the FP8 formats and refuses every other quantization). A
// checkpoint that parses here must run exactly as transformers runs it, so anything that would
// change the arithmetic is refused rather than ignored.
// Every message starts with the source name and names the field.
#include "model/config.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "core/json/strict_json.h"

namespace fg {
namespace {

constexpr const char* kSupportedArchitectures =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM";
constexpr const char* kSupportedRopeTypes = "default, llama3";

// Sizes feed buffer arithmetic everywhere downstream; bounding them here keeps every product of
// two of them inside int64 without each consumer re-checking.
constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();

// Qwen3Config declares head_dim = 128 as its default (it does not derive it from hidden_size),
// so a Qwen3 config.json without head_dim builds 128-wide heads in transformers.
constexpr int64_t kQwen3DefaultHeadDim = 128;

// ---- reading JSON values -------------------------------------------------------------------
// Absent and null read alike: Hugging Face configs write null for "use the default" (head_dim,
// num_key_value_heads, rope_scaling, sliding_window, token ids).

int64_t required_size(const JsonView& root, std::string_view key) {
  return root.required_non_null(key).as_int(1, kMaxSize);
}

bool optional_bool(const JsonView& root, std::string_view key, bool fallback) {
  const std::optional<JsonView> value = root.get_non_null(key);
  return value ? value->as_bool() : fallback;
}

// ---- architecture --------------------------------------------------------------------------

void parse_architecture(const JsonView& root, ModelConfig& config) {
  const std::string& source = root.source();
  const std::optional<JsonView> list = root.get_non_null("architectures");
  if (!list) {
    fail("{}: architectures is missing; fullgraph needs one of: {}", source,
         kSupportedArchitectures);
  }
  if (!list->raw().is_array() || list->raw().size() != 1 || !list->raw()[0].is_string()) {
    fail("{}: architectures must be a list of exactly one name, found {} (supported: {})", source,
         list->describe(), kSupportedArchitectures);
  }
  const std::string& name = list->item(0).as_string();
  if (name == "LlamaForCausalLM") {
    config.architecture = Architecture::kLlama;
  } else if (name == "MistralForCausalLM") {
    config.architecture = Architecture::kMistral;
  } else if (name == "Qwen2ForCausalLM") {
    config.architecture = Architecture::kQwen2;
  } else if (name == "Qwen3ForCausalLM") {
    config.architecture = Architecture::kQwen3;
  } else {
    fail("{}: architectures '{}' is not supported (supported: {})", source, name,
         kSupportedArchitectures);
  }
  config.architecture_name = name;
}

// ---- shapes --------------------------------------------------------------------------------

void parse_shapes(const JsonView& root, ModelConfig& config) {
  const std::string& source = root.source();
  config.hidden_size = required_size(root, "hidden_size");
  config.intermediate_size = required_size(root, "intermediate_size");
  config.num_layers = required_size(root, "num_hidden_layers");
  config.num_heads = required_size(root, "num_attention_heads");
  config.vocab_size = required_size(root, "vocab_size");
  config.max_position_embeddings = required_size(root, "max_position_embeddings");

  // Multi-head attention is GQA with one query head per KV head; that is HF's default too.
  const std::optional<JsonView> kv_heads = root.get_non_null("num_key_value_heads");
  config.num_kv_heads = kv_heads ? kv_heads->as_int(1, kMaxSize) : config.num_heads;
  if (config.num_heads % config.num_kv_heads != 0) {
    fail(
        "{}: num_key_value_heads {} must divide num_attention_heads {} (each KV head serves a "
        "whole group of query heads)",
        source, config.num_kv_heads, config.num_heads);
  }

  if (const std::optional<JsonView> head_dim = root.get_non_null("head_dim")) {
    config.head_dim = head_dim->as_int(1, kMaxSize);
  } else if (config.architecture == Architecture::kQwen3) {
    config.head_dim = kQwen3DefaultHeadDim;
  } else {
    if (config.hidden_size % config.num_heads != 0) {
      fail("{}: head_dim is absent and hidden_size {} is not divisible by num_attention_heads {}",
           source, config.hidden_size, config.num_heads);
    }
    config.head_dim = config.hidden_size / config.num_heads;
  }
  if (config.head_dim % 2 != 0) {
    fail("{}: head_dim {} must be even (RoPE rotates pairs of dimensions)", source,
         config.head_dim);
  }
}

// ---- refusals: features that would change the arithmetic ----------------------------------

void refuse_unsupported_mlp(const JsonView& root) {
  const std::string& source = root.source();
  // transformers' default activation for all four architectures is silu.
  if (const std::optional<JsonView> act = root.get_non_null("hidden_act")) {
    const std::string& name = act->as_string();
    if (name != "silu")
      fail("{}: hidden_act '{}' is not supported (supported: silu)", source, name);
  }
  if (optional_bool(root, "mlp_bias", false)) {
    fail("{}: mlp_bias true is not supported (fullgraph's MLP projections have no bias)", source);
  }
}

void refuse_sliding_window(const JsonView& root, const ModelConfig& config) {
  const std::string& source = root.source();
  if (config.architecture == Architecture::kMistral) {
    if (const std::optional<JsonView> window = root.get_non_null("sliding_window")) {
      fail("{}: sliding_window {} is not supported (sliding-window attention; only null is)",
           source, window->describe());
    }
  }
  // Qwen2/Qwen3 carry a sliding_window size even when off (Qwen2.5 writes 32768); only
  // use_sliding_window turns it on.
  if (config.architecture == Architecture::kQwen2 || config.architecture == Architecture::kQwen3) {
    if (optional_bool(root, "use_sliding_window", false)) {
      fail("{}: use_sliding_window true is not supported (sliding-window attention)", source);
    }
  }
  // Newer configs list the attention kind of every layer; it overrides the fields above in HF.
  if (const std::optional<JsonView> layer_types = root.get_non_null("layer_types")) {
    if (static_cast<int64_t>(layer_types->size()) != config.num_layers) {
      fail("{}: layer_types has {} entries but num_hidden_layers is {}", source,
           layer_types->size(), config.num_layers);
    }
    for (size_t i = 0; i < layer_types->size(); ++i) {
      const JsonView layer = layer_types->item(i);
      const std::string& kind = layer.as_string();
      if (kind != "full_attention") {
        fail("{}: {} '{}' is not supported (supported: full_attention)", source, layer.path(),
             kind);
      }
    }
  }
}

void refuse_mixture_of_experts(const JsonView& root) {
  // num_experts (Qwen-MoE), num_local_experts (Mixtral), n_routed_experts (DeepSeek) and their
  // relatives all contain "expert"; a positive count or a true flag means routed MLPs.
  for (const auto& [key, value] : root.raw().items()) {
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find("expert") == std::string::npos) continue;
    bool active =
        (value.is_number() && value.get<double>() > 0) || (value.is_boolean() && value.get<bool>());
    if (active) {
      fail("{}: {} {}: mixture-of-experts models are not supported", root.source(), key,
           root.member(key, value).describe());
    }
  }
}

void refuse_partial_rotary(const JsonView& object) {
  const std::optional<JsonView> factor = object.get_non_null("partial_rotary_factor");
  if (!factor) return;
  if (factor->as_number() != 1.0) {
    fail("{}: {} {} is not supported (RoPE must rotate the whole head; only 1 is)", object.source(),
         factor->path(), factor->describe());
  }
}

// ---- RoPE ----------------------------------------------------------------------------------

// One spelling's RoPE object (rope_scaling or rope_parameters), read on its own so that the two
// spellings can be compared before one is chosen.
struct RopeObject {
  RopeConfig rope;              // theta left at its default; see `theta`
  std::optional<double> theta;  // rope_theta inside the object, if given
  std::string type_path;        // e.g. "rope_scaling.type", for messages
  std::string type_name = "default";
};

RopeType parse_rope_type(const JsonView& object, RopeObject& out) {
  const std::string& source = object.source();
  const std::string& path = object.path();
  // transformers 4.x accepted the legacy key "type" and copied it over "rope_type".
  const std::optional<JsonView> modern = object.get_non_null("rope_type");
  const std::optional<JsonView> legacy = object.get_non_null("type");
  if (modern && legacy) {
    const std::string& a = modern->as_string();
    const std::string& b = legacy->as_string();
    if (a != b) fail("{}: {}.rope_type '{}' and {}.type '{}' disagree", source, path, a, path, b);
  }
  if (modern) {
    out.type_path = modern->path();
    out.type_name = modern->as_string();
  } else if (legacy) {
    out.type_path = legacy->path();
    out.type_name = legacy->as_string();
  } else {
    out.type_path = path + ".rope_type";
  }
  if (out.type_name == "default") return RopeType::kDefault;
  if (out.type_name == "llama3") return RopeType::kLlama3;
  fail("{}: {} '{}' is not supported (supported: {})", source, out.type_path, out.type_name,
       kSupportedRopeTypes);
}

void parse_llama3_scaling(const JsonView& object, RopeConfig& rope) {
  const std::string& source = object.source();
  const std::string& path = object.path();
  auto required = [&](std::string_view key) {
    const std::optional<JsonView> value = object.get_non_null(key);
    if (!value) fail("{}: {}.{} is required for llama3 RoPE but missing", source, path, key);
    return *value;
  };
  rope.factor = required("factor").as_positive_number();
  rope.low_freq_factor = required("low_freq_factor").as_positive_number();
  rope.high_freq_factor = required("high_freq_factor").as_positive_number();
  rope.original_max_position_embeddings =
      required("original_max_position_embeddings").as_int(1, kMaxSize);
  // The llama3 ramp divides by (high - low); equal or inverted factors have no meaning.
  if (rope.high_freq_factor <= rope.low_freq_factor) {
    fail("{}: {}.high_freq_factor {} must be greater than {}.low_freq_factor {}", source, path,
         rope.high_freq_factor, path, rope.low_freq_factor);
  }
}

RopeObject parse_rope_object(const JsonView& object) {
  object.require_object();
  // Gemma3-style rope_parameters hold one object per layer type; these models have one kind.
  for (const auto& [key, entry] : object.raw().items()) {
    if (entry.is_object()) {
      fail("{}: {}.{} is an object: per-layer-type RoPE parameters are not supported",
           object.source(), object.path(), key);
    }
  }
  RopeObject out;
  out.rope.type = parse_rope_type(object, out);
  if (out.rope.type == RopeType::kLlama3) parse_llama3_scaling(object, out.rope);
  if (const std::optional<JsonView> theta = object.get_non_null("rope_theta")) {
    out.theta = theta->as_positive_number();
  }
  refuse_partial_rotary(object);
  return out;
}

// With both spellings present, they must describe the same rotation: silently preferring one
// would run a different model from the one some tool reading the other spelling runs.
void check_rope_agreement(const std::string& source, const RopeObject& params,
                          const RopeObject& scaling) {
  if (params.rope.type != scaling.rope.type) {
    fail("{}: {} '{}' disagrees with {} '{}'", source, params.type_path, params.type_name,
         scaling.type_path, scaling.type_name);
  }
  if (params.rope.type != RopeType::kLlama3) return;
  auto same = [&](std::string_view key, double a, double b) {
    if (a != b)
      fail("{}: rope_parameters.{} {} disagrees with rope_scaling.{} {}", source, key, a, key, b);
  };
  same("factor", params.rope.factor, scaling.rope.factor);
  same("low_freq_factor", params.rope.low_freq_factor, scaling.rope.low_freq_factor);
  same("high_freq_factor", params.rope.high_freq_factor, scaling.rope.high_freq_factor);
  same("original_max_position_embeddings",
       static_cast<double>(params.rope.original_max_position_embeddings),
       static_cast<double>(scaling.rope.original_max_position_embeddings));
}

RopeConfig parse_rope(const JsonView& root) {
  const std::string& source = root.source();
  refuse_partial_rotary(root);

  std::optional<double> top_theta;
  if (const std::optional<JsonView> theta = root.get_non_null("rope_theta"))
    top_theta = theta->as_positive_number();

  std::optional<RopeObject> scaling;
  if (const std::optional<JsonView> value = root.get_non_null("rope_scaling"))
    scaling = parse_rope_object(*value);
  std::optional<RopeObject> params;
  if (const std::optional<JsonView> value = root.get_non_null("rope_parameters")) {
    params = parse_rope_object(*value);
  }

  // Collect every stated theta; all of them must be the same number.
  struct Stated {
    std::string_view path;
    double value;
  };
  std::vector<Stated> thetas;
  if (params && params->theta) thetas.push_back({"rope_parameters.rope_theta", *params->theta});
  if (top_theta) thetas.push_back({"rope_theta", *top_theta});
  if (scaling && scaling->theta) thetas.push_back({"rope_scaling.rope_theta", *scaling->theta});
  for (const Stated& other : thetas) {
    if (other.value != thetas.front().value) {
      fail("{}: {} {} disagrees with {} {}", source, thetas.front().path, thetas.front().value,
           other.path, other.value);
    }
  }
  if (params && scaling) check_rope_agreement(source, *params, *scaling);

  RopeConfig rope = params ? params->rope : scaling ? scaling->rope : RopeConfig{};
  rope.theta = thetas.empty() ? 10000.0 : thetas.front().value;  // HF's default base
  return rope;
}

// ---- dtype and special tokens --------------------------------------------------------------

DType parse_checkpoint_dtype(const JsonView& root) {
  // transformers 5 writes "dtype"; older versions "torch_dtype". The newer key wins.
  std::optional<JsonView> value = root.get_non_null("dtype");
  if (!value) value = root.get_non_null("torch_dtype");
  if (!value) return DType::kBF16;
  const std::string& name = value->as_string();
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float16") return DType::kF16;
  if (name == "float32") return DType::kF32;
  fail("{}: {} '{}' is not supported (supported: bfloat16, float16, float32)", root.source(),
       value->path(), name);
}

std::vector<int64_t> parse_token_ids(const JsonView& root, std::string_view key) {
  const std::optional<JsonView> value = root.get_non_null(key);
  if (!value) return {};
  if (!value->raw().is_array()) return {value->as_int(0)};
  std::vector<int64_t> ids;
  for (size_t i = 0; i < value->size(); ++i) ids.push_back(value->item(i).as_int(0));
  return ids;
}

ModelConfig parse_config(const JsonDocument& document) {
  const JsonView root = document.root();
  root.require_object();
  ModelConfig config;
  parse_architecture(root, config);
  parse_shapes(root, config);

  refuse_unsupported_mlp(root);
  refuse_sliding_window(root, config);
  refuse_mixture_of_experts(root);
  config.quantization = parse_quantization_config(root);

  config.rms_norm_eps = 1e-6;
  if (const std::optional<JsonView> eps = root.get_non_null("rms_norm_eps"))
    config.rms_norm_eps = eps->as_positive_number();
  config.rope = parse_rope(root);
  config.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", false);

  // Qwen2's attention hard-codes q/k/v biases and has no attention_bias field to read.
  bool attention_bias = optional_bool(root, "attention_bias", false);
  config.qkv_bias = config.architecture == Architecture::kQwen2 || attention_bias;
  config.qk_norm = config.architecture == Architecture::kQwen3;

  config.dtype = parse_checkpoint_dtype(root);
  config.bos_token_ids = parse_token_ids(root, "bos_token_id");
  config.eos_token_ids = parse_token_ids(root, "eos_token_id");
  return config;
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  return parse_config(parse_strict_json(json_text, {source, ""}));
}

ModelConfig load_model_config(const std::string& path) {
  return parse_config(read_json_file(path));
}

AttentionLimits attention_limits(const ModelConfig& config, int64_t max_tokens, int64_t max_reqs, int64_t max_context,
                                 int64_t block_size) {
  AttentionLimits limits;
  limits.max_tokens = max_tokens;
  limits.max_reqs = max_reqs;
  limits.max_context = max_context;
  limits.num_heads = config.num_heads;
  limits.num_kv_heads = config.num_kv_heads;
  limits.head_dim = config.head_dim;
  limits.block_size = block_size;
  return limits;
}

}  // namespace fg
