// model/config.cpp — turns a Hugging Face config.json into fg::ModelConfig, or refuses it.
//
// Owns: reading the file, the JSON type checks of every field fullgraph reads, Hugging Face's
// defaults for absent fields, both spellings of the RoPE settings (the Hub's rope_theta +
// rope_scaling and transformers 5's rope_parameters), and the refusal of every feature the
// engine does not implement (sliding windows, mixtures of experts, quantized checkpoints, other
// activations and RoPE types). A checkpoint that parses here must run exactly as transformers
// runs it, so anything that would change the arithmetic is refused rather than ignored.
// Every message starts with the source name and names the field.
#include "model/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/error.h"

namespace fg {
namespace {

using json = nlohmann::json;

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

// How a value appears in messages: its JSON text, tagged with the type where the text alone
// would hide it ("64" vs 64), shortened so a huge array cannot flood a log line.
std::string describe(const json& value) {
  std::string text = value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  switch (value.type()) {
    case json::value_t::string: return "string " + text;
    case json::value_t::boolean: return "boolean " + text;
    case json::value_t::array: return "array " + text;
    case json::value_t::object: return "object " + text;
    default: return text;  // numbers and null read unambiguously
  }
}

// The value of `key`, or nullptr when it is absent or null: Hugging Face configs write null for
// "use the default" (head_dim, num_key_value_heads, rope_scaling, sliding_window, token ids).
const json* find(const json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t as_int(const std::string& source, std::string_view path, const json& value,
               std::string_view expected) {
  bool fits = value.is_number_integer() &&
              (!value.is_number_unsigned() ||
               value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (!fits) fail("{}: {} must be {}, found {}", source, path, expected, describe(value));
  return value.get<int64_t>();
}

// A size: an integer in [1, kMaxSize]. 64.0 is refused like 64.5: Python writes ints as ints.
int64_t as_size(const std::string& source, std::string_view path, const json& value) {
  int64_t size = as_int(source, path, value, "a positive integer");
  if (size <= 0 || size > kMaxSize) {
    fail("{}: {} must be a positive integer of at most {}, found {}", source, path, kMaxSize,
         describe(value));
  }
  return size;
}

double as_number(const std::string& source, std::string_view path, const json& value) {
  if (!value.is_number()) fail("{}: {} must be a number, found {}", source, path, describe(value));
  double number = value.get<double>();
  if (!std::isfinite(number))
    fail("{}: {} must be finite, found {}", source, path, describe(value));
  return number;
}

double as_positive_number(const std::string& source, std::string_view path, const json& value) {
  double number = as_number(source, path, value);
  if (number <= 0) fail("{}: {} must be positive, found {}", source, path, describe(value));
  return number;
}

bool as_bool(const std::string& source, std::string_view path, const json& value) {
  if (!value.is_boolean())
    fail("{}: {} must be true or false, found {}", source, path, describe(value));
  return value.get<bool>();
}

const std::string& as_string(const std::string& source, std::string_view path, const json& value) {
  if (!value.is_string()) fail("{}: {} must be a string, found {}", source, path, describe(value));
  return value.get_ref<const std::string&>();
}

const json& as_object(const std::string& source, std::string_view path, const json& value) {
  if (!value.is_object()) fail("{}: {} must be an object, found {}", source, path, describe(value));
  return value;
}

int64_t required_size(const std::string& source, const json& root, std::string_view key) {
  const json* value = find(root, key);
  if (value == nullptr) fail("{}: {} is required but missing (or null)", source, key);
  return as_size(source, key, *value);
}

bool optional_bool(const std::string& source, const json& root, std::string_view key,
                   bool fallback) {
  const json* value = find(root, key);
  return value == nullptr ? fallback : as_bool(source, key, *value);
}

json parse_json(const std::string& text, const std::string& source) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& error) {
    // nlohmann's text reads "[json.exception.parse_error.101] parse error at line 3, column 7:
    // ..."; the bracketed id means nothing to a user, the position does.
    std::string_view detail = error.what();
    if (auto close = detail.find("] "); detail.starts_with("[json.") && close != detail.npos) {
      detail.remove_prefix(close + 2);
    }
    fail("{}: malformed JSON: {}", source, detail);
  }
  if (!root.is_object())
    fail("{}: the top level must be a JSON object, found {}", source, describe(root));
  return root;
}

// ---- architecture --------------------------------------------------------------------------

void parse_architecture(const std::string& source, const json& root, ModelConfig& config) {
  const json* list = find(root, "architectures");
  if (list == nullptr) {
    fail("{}: architectures is missing; fullgraph needs one of: {}", source,
         kSupportedArchitectures);
  }
  if (!list->is_array() || list->size() != 1 || !(*list)[0].is_string()) {
    fail("{}: architectures must be a list of exactly one name, found {} (supported: {})", source,
         describe(*list), kSupportedArchitectures);
  }
  const std::string& name = (*list)[0].get_ref<const std::string&>();
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

void parse_shapes(const std::string& source, const json& root, ModelConfig& config) {
  config.hidden_size = required_size(source, root, "hidden_size");
  config.intermediate_size = required_size(source, root, "intermediate_size");
  config.num_layers = required_size(source, root, "num_hidden_layers");
  config.num_heads = required_size(source, root, "num_attention_heads");
  config.vocab_size = required_size(source, root, "vocab_size");
  config.max_position_embeddings = required_size(source, root, "max_position_embeddings");

  // Multi-head attention is GQA with one query head per KV head; that is HF's default too.
  const json* kv_heads = find(root, "num_key_value_heads");
  config.num_kv_heads =
      kv_heads ? as_size(source, "num_key_value_heads", *kv_heads) : config.num_heads;
  if (config.num_heads % config.num_kv_heads != 0) {
    fail(
        "{}: num_key_value_heads {} must divide num_attention_heads {} (each KV head serves a "
        "whole group of query heads)",
        source, config.num_kv_heads, config.num_heads);
  }

  if (const json* head_dim = find(root, "head_dim")) {
    config.head_dim = as_size(source, "head_dim", *head_dim);
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

void refuse_unsupported_mlp(const std::string& source, const json& root) {
  // transformers' default activation for all four architectures is silu.
  if (const json* act = find(root, "hidden_act")) {
    const std::string& name = as_string(source, "hidden_act", *act);
    if (name != "silu")
      fail("{}: hidden_act '{}' is not supported (supported: silu)", source, name);
  }
  if (optional_bool(source, root, "mlp_bias", false)) {
    fail("{}: mlp_bias true is not supported (fullgraph's MLP projections have no bias)", source);
  }
}

void refuse_sliding_window(const std::string& source, const json& root, const ModelConfig& config) {
  if (config.architecture == Architecture::kMistral) {
    if (const json* window = find(root, "sliding_window")) {
      fail("{}: sliding_window {} is not supported (sliding-window attention; only null is)",
           source, describe(*window));
    }
  }
  // Qwen2/Qwen3 carry a sliding_window size even when off (Qwen2.5 writes 32768); only
  // use_sliding_window turns it on.
  if (config.architecture == Architecture::kQwen2 || config.architecture == Architecture::kQwen3) {
    if (optional_bool(source, root, "use_sliding_window", false)) {
      fail("{}: use_sliding_window true is not supported (sliding-window attention)", source);
    }
  }
  // Newer configs list the attention kind of every layer; it overrides the fields above in HF.
  if (const json* layer_types = find(root, "layer_types")) {
    if (!layer_types->is_array()) {
      fail("{}: layer_types must be a list, found {}", source, describe(*layer_types));
    }
    if (static_cast<int64_t>(layer_types->size()) != config.num_layers) {
      fail("{}: layer_types has {} entries but num_hidden_layers is {}", source,
           layer_types->size(), config.num_layers);
    }
    for (size_t i = 0; i < layer_types->size(); ++i) {
      const std::string path = fmt::format("layer_types[{}]", i);
      const std::string& kind = as_string(source, path, (*layer_types)[i]);
      if (kind != "full_attention") {
        fail("{}: {} '{}' is not supported (supported: full_attention)", source, path, kind);
      }
    }
  }
}

void refuse_mixture_of_experts(const std::string& source, const json& root) {
  // num_experts (Qwen-MoE), num_local_experts (Mixtral), n_routed_experts (DeepSeek) and their
  // relatives all contain "expert"; a positive count or a true flag means routed MLPs.
  for (const auto& [key, value] : root.items()) {
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find("expert") == std::string::npos) continue;
    bool active =
        (value.is_number() && value.get<double>() > 0) || (value.is_boolean() && value.get<bool>());
    if (active) {
      fail("{}: {} {}: mixture-of-experts models are not supported", source, key, describe(value));
    }
  }
}

void refuse_quantization(const std::string& source, const json& root) {
  for (const char* key : {"quantization_config", "compression_config"}) {
    const json* quant = find(root, key);
    if (quant == nullptr) continue;
    std::string method;
    if (quant->is_object()) {
      if (const json* m = find(*quant, "quant_method"); m && m->is_string()) {
        method = fmt::format(" (quant_method '{}')", m->get<std::string>());
      }
    }
    fail("{}: {} is present{}: quantized checkpoints are not supported", source, key, method);
  }
}

void refuse_partial_rotary(const std::string& source, const json& object, std::string_view path) {
  const json* factor = find(object, "partial_rotary_factor");
  if (factor == nullptr) return;
  std::string field =
      path.empty() ? "partial_rotary_factor" : fmt::format("{}.partial_rotary_factor", path);
  if (as_number(source, field, *factor) != 1.0) {
    fail("{}: {} {} is not supported (RoPE must rotate the whole head; only 1 is)", source, field,
         describe(*factor));
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

RopeType parse_rope_type(const std::string& source, const json& object, const std::string& path,
                         RopeObject& out) {
  // transformers 4.x accepted the legacy key "type" and copied it over "rope_type".
  const json* modern = find(object, "rope_type");
  const json* legacy = find(object, "type");
  if (modern && legacy) {
    const std::string& a = as_string(source, path + ".rope_type", *modern);
    const std::string& b = as_string(source, path + ".type", *legacy);
    if (a != b) fail("{}: {}.rope_type '{}' and {}.type '{}' disagree", source, path, a, path, b);
  }
  if (modern) {
    out.type_path = path + ".rope_type";
    out.type_name = as_string(source, out.type_path, *modern);
  } else if (legacy) {
    out.type_path = path + ".type";
    out.type_name = as_string(source, out.type_path, *legacy);
  } else {
    out.type_path = path + ".rope_type";
  }
  if (out.type_name == "default") return RopeType::kDefault;
  if (out.type_name == "llama3") return RopeType::kLlama3;
  fail("{}: {} '{}' is not supported (supported: {})", source, out.type_path, out.type_name,
       kSupportedRopeTypes);
}

void parse_llama3_scaling(const std::string& source, const json& object, const std::string& path,
                          RopeConfig& rope) {
  auto required = [&](std::string_view key) -> const json& {
    const json* value = find(object, key);
    if (value == nullptr)
      fail("{}: {}.{} is required for llama3 RoPE but missing", source, path, key);
    return *value;
  };
  rope.factor = as_positive_number(source, path + ".factor", required("factor"));
  rope.low_freq_factor =
      as_positive_number(source, path + ".low_freq_factor", required("low_freq_factor"));
  rope.high_freq_factor =
      as_positive_number(source, path + ".high_freq_factor", required("high_freq_factor"));
  rope.original_max_position_embeddings =
      as_size(source, path + ".original_max_position_embeddings",
              required("original_max_position_embeddings"));
  // The llama3 ramp divides by (high - low); equal or inverted factors have no meaning.
  if (rope.high_freq_factor <= rope.low_freq_factor) {
    fail("{}: {}.high_freq_factor {} must be greater than {}.low_freq_factor {}", source, path,
         rope.high_freq_factor, path, rope.low_freq_factor);
  }
}

RopeObject parse_rope_object(const std::string& source, const json& value,
                             const std::string& path) {
  const json& object = as_object(source, path, value);
  // Gemma3-style rope_parameters hold one object per layer type; these models have one kind.
  for (const auto& [key, entry] : object.items()) {
    if (entry.is_object()) {
      fail("{}: {}.{} is an object: per-layer-type RoPE parameters are not supported", source, path,
           key);
    }
  }
  RopeObject out;
  out.rope.type = parse_rope_type(source, object, path, out);
  if (out.rope.type == RopeType::kLlama3) parse_llama3_scaling(source, object, path, out.rope);
  if (const json* theta = find(object, "rope_theta")) {
    out.theta = as_positive_number(source, path + ".rope_theta", *theta);
  }
  refuse_partial_rotary(source, object, path);
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

RopeConfig parse_rope(const std::string& source, const json& root) {
  refuse_partial_rotary(source, root, "");

  std::optional<double> top_theta;
  if (const json* theta = find(root, "rope_theta"))
    top_theta = as_positive_number(source, "rope_theta", *theta);

  std::optional<RopeObject> scaling;
  if (const json* value = find(root, "rope_scaling"))
    scaling = parse_rope_object(source, *value, "rope_scaling");
  std::optional<RopeObject> params;
  if (const json* value = find(root, "rope_parameters")) {
    params = parse_rope_object(source, *value, "rope_parameters");
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

DType parse_checkpoint_dtype(const std::string& source, const json& root) {
  // transformers 5 writes "dtype"; older versions "torch_dtype". The newer key wins.
  std::string_view key = "dtype";
  const json* value = find(root, key);
  if (value == nullptr) {
    key = "torch_dtype";
    value = find(root, key);
  }
  if (value == nullptr) return DType::kBF16;
  const std::string& name = as_string(source, key, *value);
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float16") return DType::kF16;
  if (name == "float32") return DType::kF32;
  fail("{}: {} '{}' is not supported (supported: bfloat16, float16, float32)", source, key, name);
}

std::vector<int64_t> parse_token_ids(const std::string& source, const json& root,
                                     std::string_view key) {
  const json* value = find(root, key);
  if (value == nullptr) return {};
  auto token = [&](const json& id, std::string_view path) {
    int64_t token_id =
        as_int(source, path, id, "a token id (non-negative integer), null or a list of them");
    if (token_id < 0)
      fail("{}: {} must be a non-negative token id, found {}", source, path, token_id);
    return token_id;
  };
  if (!value->is_array()) return {token(*value, key)};
  std::vector<int64_t> ids;
  for (size_t i = 0; i < value->size(); ++i)
    ids.push_back(token((*value)[i], fmt::format("{}[{}]", key, i)));
  return ids;
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  const json root = parse_json(json_text, source);
  ModelConfig config;
  parse_architecture(source, root, config);
  parse_shapes(source, root, config);

  refuse_unsupported_mlp(source, root);
  refuse_sliding_window(source, root, config);
  refuse_mixture_of_experts(source, root);
  refuse_quantization(source, root);

  config.rms_norm_eps = 1e-6;
  if (const json* eps = find(root, "rms_norm_eps"))
    config.rms_norm_eps = as_positive_number(source, "rms_norm_eps", *eps);
  config.rope = parse_rope(source, root);
  config.tie_word_embeddings = optional_bool(source, root, "tie_word_embeddings", false);

  // Qwen2's attention hard-codes q/k/v biases and has no attention_bias field to read.
  bool attention_bias = optional_bool(source, root, "attention_bias", false);
  config.qkv_bias = config.architecture == Architecture::kQwen2 || attention_bias;
  config.qk_norm = config.architecture == Architecture::kQwen3;

  config.dtype = parse_checkpoint_dtype(source, root);
  config.bos_token_ids = parse_token_ids(source, root, "bos_token_id");
  config.eos_token_ids = parse_token_ids(source, root, "eos_token_id");
  return config;
}

ModelConfig load_model_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    fail("{}: is a directory; expected the path of a config.json file", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open: {}", path, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("{}: cannot read: {}", path, std::strerror(errno));
  return parse_model_config(text.str(), path);
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
