// model/gguf_config.cpp — GGUF metadata → ModelConfig (see gguf_config.h).
//
// Key names and defaults are llama.cpp's (llama-arch.cpp, llama-model.cpp's load_hparams): a key
// llama.cpp treats as optional has llama.cpp's default here, a key it requires is required. Every
// message names the file and the key.
#include "model/gguf_config.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"
#include "model/gguf.h"

namespace fg {
namespace {

// As config.cpp bounds config.json's sizes: every product of two stays inside int64.
constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();

constexpr const char* kSupportedArchitectures = "llama, qwen2, qwen3";

class Keys {
 public:
  Keys(const GgufFile& file, std::string arch) : file_(file), meta_(file.metadata()), arch_(std::move(arch)) {}

  std::string key(const std::string& suffix) const { return arch_ + "." + suffix; }
  bool has(const std::string& suffix) const { return meta_.contains(key(suffix)); }

  int64_t size(const std::string& suffix) const {
    FG_CHECK(has(suffix), "{}: the GGUF metadata has no {} (needed for a {} model)", file_.path(), key(suffix), arch_);
    return checked(suffix, meta_.get_int(key(suffix)));
  }
  int64_t size(const std::string& suffix, int64_t fallback) const {
    return has(suffix) ? checked(suffix, meta_.get_int(key(suffix))) : fallback;
  }
  double positive(const std::string& suffix, double fallback, bool required) const {
    FG_CHECK(!required || has(suffix), "{}: the GGUF metadata has no {} (needed for a {} model)", file_.path(),
             key(suffix), arch_);
    const double value = meta_.get_float(key(suffix), fallback);
    FG_CHECK(value > 0.0 && value < std::numeric_limits<double>::infinity(), "{}: {} is {}; it must be positive",
             file_.path(), key(suffix), value);
    return value;
  }

 private:
  int64_t checked(const std::string& suffix, int64_t value) const {
    FG_CHECK(value >= 1 && value <= kMaxSize, "{}: {} is {}; expected 1 to {}", file_.path(), key(suffix), value,
             kMaxSize);
    return value;
  }

  const GgufFile& file_;
  const GgufMetadata& meta_;
  std::string arch_;
};

Architecture parse_architecture(const GgufFile& file, const std::string& name) {
  if (name == "llama") return Architecture::kLlama;
  if (name == "qwen2") return Architecture::kQwen2;
  if (name == "qwen3") return Architecture::kQwen3;
  fail("{}: general.architecture '{}' is not supported (supported: {})", file.path(), name, kSupportedArchitectures);
}

void parse_shapes(const GgufFile& file, const Keys& k, ModelConfig& c) {
  c.num_layers = k.size("block_count");
  c.hidden_size = k.size("embedding_length");
  c.intermediate_size = k.size("feed_forward_length");
  c.max_position_embeddings = k.size("context_length");
  c.num_heads = k.size("attention.head_count");
  c.num_kv_heads = k.size("attention.head_count_kv", c.num_heads);
  FG_CHECK(c.num_heads % c.num_kv_heads == 0,
           "{}: {} ({}) must divide {} ({}): each KV head serves a whole group of query heads", file.path(),
           k.key("attention.head_count_kv"), c.num_kv_heads, k.key("attention.head_count"), c.num_heads);
  if (k.has("attention.key_length")) {
    c.head_dim = k.size("attention.key_length");
  } else {
    FG_CHECK(c.hidden_size % c.num_heads == 0, "{}: {} is absent and {} ({}) is not divisible by {} ({})", file.path(),
             k.key("attention.key_length"), k.key("embedding_length"), c.hidden_size, k.key("attention.head_count"),
             c.num_heads);
    c.head_dim = c.hidden_size / c.num_heads;
  }
  FG_CHECK(k.size("attention.value_length", c.head_dim) == c.head_dim,
           "{}: {} differs from the key length {}; fullgraph needs equal key and value head sizes", file.path(),
           k.key("attention.value_length"), c.head_dim);
  FG_CHECK(c.head_dim % 2 == 0, "{}: the head size {} must be even (RoPE rotates pairs of dimensions)", file.path(),
           c.head_dim);
  // RoPE over part of each head (partial rotary) would change the arithmetic.
  FG_CHECK(k.size("rope.dimension_count", c.head_dim) == c.head_dim,
           "{}: {} is {} but the head size is {}; partial rotary embeddings are not supported", file.path(),
           k.key("rope.dimension_count"), k.size("rope.dimension_count", c.head_dim), c.head_dim);

  // llama.cpp sizes the vocabulary by token_embd's rows; Hugging Face's vocab_size is the same.
  const GgufTensorInfo* embed = file.find("token_embd.weight");
  FG_CHECK(embed != nullptr, "{}: missing tensor 'token_embd.weight' (the embedding; it also gives the vocabulary size)",
           file.path());
  FG_CHECK(embed->shape.size() == 2 && embed->shape[1] == c.hidden_size,
           "{}: tensor 'token_embd.weight' has {} dimensions (rows {}) but must be [vocab, {}] ({} {})", file.path(),
           embed->shape.size(), embed->shape.front(), c.hidden_size, k.key("embedding_length"), c.hidden_size);
  FG_CHECK(embed->shape[0] >= 1 && embed->shape[0] <= kMaxSize, "{}: token_embd.weight has {} rows", file.path(),
           embed->shape[0]);
  c.vocab_size = embed->shape[0];
  if (const GgufValue* tokens = file.metadata().find("tokenizer.ggml.tokens")) {
    FG_CHECK(tokens->count <= static_cast<uint64_t>(c.vocab_size),
             "{}: tokenizer.ggml.tokens holds {} tokens but token_embd.weight has only {} rows", file.path(),
             tokens->count, c.vocab_size);
  }
}

void refuse_unsupported(const GgufFile& file, const Keys& k) {
  const int64_t experts = file.metadata().get_int(k.key("expert_count"), 0);
  FG_CHECK(experts <= 1, "{}: {} is {}: mixtures of experts are not supported", file.path(), k.key("expert_count"),
           experts);
  if (k.has("rope.scaling.type")) {
    const std::string& type = file.metadata().get_string(k.key("rope.scaling.type"));
    FG_CHECK(type == "none", "{}: {} is '{}': RoPE scaling in GGUF files is not supported (only 'none')", file.path(),
             k.key("rope.scaling.type"), type);
  }
  if (k.has("rope.scale_linear")) {
    const double scale = file.metadata().get_float(k.key("rope.scale_linear"));
    FG_CHECK(scale == 1.0, "{}: {} is {}: linear RoPE scaling is not supported", file.path(),
             k.key("rope.scale_linear"), scale);
  }
  // The converter writes Llama 3's RoPE scaling as per-frequency factors in this tensor rather than
  // as keys. Such files are refused by name, like every other RoPE scaling here, until the loader
  // maps the factors back onto the llama3 scaling the folder path supports.
  FG_CHECK(file.find("rope_freqs.weight") == nullptr,
           "{}: tensor 'rope_freqs.weight' (RoPE frequency factors, e.g. Llama 3.1's scaling) is not supported",
           file.path());
}

void add_token_id(const GgufMetadata& meta, const std::string& key, std::vector<int64_t>& ids) {
  if (!meta.contains(key)) return;
  const int64_t id = meta.get_int(key);
  FG_CHECK(id >= 0, "{} is {}; a token id must not be negative", key, id);
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& file) {
  const GgufMetadata& meta = file.metadata();
  FG_CHECK(meta.contains("general.architecture"), "{}: the GGUF metadata has no general.architecture", file.path());
  ModelConfig c;
  c.architecture_name = meta.get_string("general.architecture");
  c.architecture = parse_architecture(file, c.architecture_name);
  const Keys k(file, c.architecture_name);
  parse_shapes(file, k, c);
  refuse_unsupported(file, k);

  // llama.cpp reads the epsilon as a float32, which is what the file holds.
  c.rms_norm_eps = k.positive("attention.layer_norm_rms_epsilon", 0.0, /*required=*/true);
  c.rope.type = RopeType::kDefault;
  c.rope.theta = k.positive("rope.freq_base", 10000.0, /*required=*/false);
  c.tie_word_embeddings = file.find("output.weight") == nullptr;

  // Qwen2's attention always has q/k/v biases; a Llama or Qwen3 has them when the tensors are there.
  c.qkv_bias = c.architecture == Architecture::kQwen2 || file.find("blk.0.attn_q.bias") != nullptr;
  if (c.architecture == Architecture::kQwen3) {
    FG_CHECK(file.find("blk.0.attn_q_norm.weight") != nullptr && file.find("blk.0.attn_k_norm.weight") != nullptr,
             "{}: a qwen3 model needs the q/k norm tensors blk.N.attn_q_norm.weight and blk.N.attn_k_norm.weight, "
             "and blk.0's are missing",
             file.path());
    c.qk_norm = true;
  }

  // Every weight is dequantized at load time to the backend's compute dtype, so the checkpoint's
  // own types do not choose one: F32 is what Backend::weight_dtype maps from (F32 on the CPU, BF16
  // on CUDA).
  c.dtype = DType::kF32;
  add_token_id(meta, "tokenizer.ggml.bos_token_id", c.bos_token_ids);
  // llama.cpp ends generation at any end-of-generation token: eos, end-of-turn and end-of-message.
  add_token_id(meta, "tokenizer.ggml.eos_token_id", c.eos_token_ids);
  add_token_id(meta, "tokenizer.ggml.eot_token_id", c.eos_token_ids);
  add_token_id(meta, "tokenizer.ggml.eom_token_id", c.eos_token_ids);
  return c;
}

}  // namespace fg
