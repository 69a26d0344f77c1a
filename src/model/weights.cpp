// model/weights.cpp — weight names and shapes per config, checkpoint loading and dummy weights.
#include "model/weights.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/host_buffer.h"
#include "core/thread_pool.h"
#include "model/fp8_weights.h"
#include "model/safetensors.h"

namespace fg {

namespace {

std::string layer_prefix(int64_t layer) { return fmt::format("model.layers.{}.", layer); }

std::string shape_string(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Where each expected tensor goes in ModelWeights.
Tensor* slot_for(ModelWeights& w, const ModelConfig& config, const std::string& name) {
  if (name == "model.embed_tokens.weight") return &w.embed_tokens;
  if (name == "model.norm.weight") return &w.final_norm;
  if (name == "lm_head.weight") return &w.lm_head;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const std::string p = layer_prefix(l);
    if (name.rfind(p, 0) != 0) continue;
    const std::string rest = name.substr(p.size());
    LayerWeights& L = w.layers[l];
    static const std::map<std::string, Tensor LayerWeights::*> fields = {
        {"input_layernorm.weight", &LayerWeights::input_norm},
        {"self_attn.q_proj.weight", &LayerWeights::q_proj},
        {"self_attn.q_proj.bias", &LayerWeights::q_bias},
        {"self_attn.k_proj.weight", &LayerWeights::k_proj},
        {"self_attn.k_proj.bias", &LayerWeights::k_bias},
        {"self_attn.v_proj.weight", &LayerWeights::v_proj},
        {"self_attn.v_proj.bias", &LayerWeights::v_bias},
        {"self_attn.q_norm.weight", &LayerWeights::q_norm},
        {"self_attn.k_norm.weight", &LayerWeights::k_norm},
        {"self_attn.o_proj.weight", &LayerWeights::o_proj},
        {"post_attention_layernorm.weight", &LayerWeights::post_attention_norm},
        {"mlp.gate_proj.weight", &LayerWeights::gate_proj},
        {"mlp.up_proj.weight", &LayerWeights::up_proj},
        {"mlp.down_proj.weight", &LayerWeights::down_proj},
    };
    auto it = fields.find(rest);
    FG_ASSERT(it != fields.end());
    return &(L.*(it->second));
  }
  FG_ASSERT(false);
}

// Where a quantized linear's input rounding goes in ModelWeights.
LinearInput* input_slot_for(ModelWeights& w, const ModelConfig& config, const std::string& name) {
  static const std::vector<std::pair<std::string, LinearInput LayerWeights::*>> fields = {
      {"self_attn.q_proj.weight", &LayerWeights::q_in},  {"self_attn.k_proj.weight", &LayerWeights::k_in},
      {"self_attn.v_proj.weight", &LayerWeights::v_in},  {"self_attn.o_proj.weight", &LayerWeights::o_in},
      {"mlp.gate_proj.weight", &LayerWeights::gate_in},  {"mlp.up_proj.weight", &LayerWeights::up_in},
      {"mlp.down_proj.weight", &LayerWeights::down_in},
  };
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const std::string p = layer_prefix(l);
    if (name.rfind(p, 0) != 0) continue;
    for (const auto& [suffix, field] : fields)
      if (name.substr(p.size()) == suffix) return &(w.layers[l].*field);
  }
  FG_ASSERT(false);
}

// Tensors some checkpoints carry that inference does not use.
bool ignorable(const std::string& name) {
  return name.ends_with(".rotary_emb.inv_freq");
}

ModelWeights empty_weights(const ModelConfig& config) {
  ModelWeights w;
  w.layers.resize(static_cast<size_t>(config.num_layers));
  return w;
}

void tie_lm_head(ModelWeights& w, const ModelConfig& config) {
  if (config.tie_word_embeddings) w.lm_head = w.embed_tokens;
}

// splitmix64: a counter-based generator, so any element's value is a pure function of its index.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_name(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The matmuls a backend may run as one (Backend::linear_group): a layer's q/k/v projections, their
// biases, and its gate/up projections. The key names the group within its layer; empty: none.
std::string group_of(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> members = {
      {"self_attn.q_proj.weight", "qkv"},      {"self_attn.k_proj.weight", "qkv"},
      {"self_attn.v_proj.weight", "qkv"},      {"self_attn.q_proj.bias", "qkv_bias"},
      {"self_attn.k_proj.bias", "qkv_bias"},   {"self_attn.v_proj.bias", "qkv_bias"},
      {"mlp.gate_proj.weight", "gate_up"},     {"mlp.up_proj.weight", "gate_up"},
  };
  for (const auto& [suffix, group] : members)
    if (name.ends_with(suffix)) return name.substr(0, name.size() - suffix.size()) + group;
  return {};
}

// Memory for the weights: each group's members back to back in one allocation, in the
// order expected_weights lists them, so that linear_group can run them as one matmul; every
// other tensor in an allocation of its own. A member goes on its own instead when its dtype is
// not its group's (a checkpoint mixing dtypes) or when the members' sizes would leave one off a
// 16-byte boundary.
class WeightPlacement {
 public:
  WeightPlacement(const ModelConfig& config, Backend& backend, ModelWeights& weights)
      : backend_(backend), weights_(weights) {
    for (const WeightSpec& spec : expected_weights(config)) {
      const std::string group = group_of(spec.name);
      if (group.empty()) continue;
      Group& g = groups_[group];
      offsets_[spec.name] = g.numel;
      g.numel += spec.numel();
    }
  }

  // A flat [numel] tensor of `dtype` for the tensor called `name`.
  Tensor allocate(const std::string& name, DType dtype, int64_t numel) {
    const auto offset = offsets_.find(name);
    if (offset != offsets_.end()) {
      Group& g = groups_.at(group_of(name));
      const size_t element = dtype_size(dtype);
      const bool aligned = offset->second * element % 16 == 0;
      if (aligned && (!g.memory.memory || g.memory.tensor.dtype == dtype)) {
        if (!g.memory.memory) {
          g.memory = backend_.allocate(dtype, {g.numel});
          weights_.keep_alive.push_back(g.memory.memory);
        }
        return g.memory.tensor.rows(offset->second, numel);
      }
    }
    Allocation a = backend_.allocate(dtype, {numel});
    weights_.keep_alive.push_back(a.memory);
    return a.tensor;
  }

 private:
  struct Group {
    int64_t numel = 0;
    Allocation memory;
  };
  Backend& backend_;
  ModelWeights& weights_;
  std::map<std::string, Group> groups_;
  std::map<std::string, int64_t> offsets_;  // a member's first element in its group
};

}  // namespace

std::vector<WeightSpec> expected_weights(const ModelConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  std::vector<WeightSpec> specs = {{"model.embed_tokens.weight", {V, H}}};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = layer_prefix(l);
    specs.push_back({p + "input_layernorm.weight", {H}});
    specs.push_back({p + "self_attn.q_proj.weight", {c.q_size(), H}});
    specs.push_back({p + "self_attn.k_proj.weight", {c.kv_size(), H}});
    specs.push_back({p + "self_attn.v_proj.weight", {c.kv_size(), H}});
    if (c.qkv_bias) {
      specs.push_back({p + "self_attn.q_proj.bias", {c.q_size()}});
      specs.push_back({p + "self_attn.k_proj.bias", {c.kv_size()}});
      specs.push_back({p + "self_attn.v_proj.bias", {c.kv_size()}});
    }
    if (c.qk_norm) {
      specs.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
      specs.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
    }
    specs.push_back({p + "self_attn.o_proj.weight", {H, c.q_size()}});
    specs.push_back({p + "post_attention_layernorm.weight", {H}});
    specs.push_back({p + "mlp.gate_proj.weight", {I, H}});
    specs.push_back({p + "mlp.up_proj.weight", {I, H}});
    specs.push_back({p + "mlp.down_proj.weight", {H, I}});
  }
  specs.push_back({"model.norm.weight", {H}});
  if (!c.tie_word_embeddings) specs.push_back({"lm_head.weight", {V, H}});
  return specs;
}

ModelWeights load_weights(const ModelConfig& config, std::shared_ptr<const Checkpoint> checkpoint_ptr,
                          Backend& backend) {
  const Checkpoint& checkpoint = *checkpoint_ptr;
  ModelWeights w = empty_weights(config);
  w.keep_alive.push_back(checkpoint_ptr);
  WeightPlacement placement(config, backend, w);
  std::optional<ThreadPool> pool;  // started by the first tensor that needs converting
  std::set<std::string> expected;
  for (const WeightSpec& spec : expected_weights(config)) {
    expected.insert(spec.name);
    const std::optional<std::string> linear = quantizable_linear(spec.name);
    if (config.quantization && linear && config.quantization->quantizes(*linear)) {
      FG_CHECK(backend.weight_dtype(DType::kF8E4M3) == DType::kF32, "{}: the {} backend does not run FP8 "
               "checkpoints (quantization_config '{}'); the cpu backend does", checkpoint.dir(), backend.name(),
               config.quantization->method);
      if (!pool) pool.emplace();
      const Fp8Linear fp8 = load_fp8_linear(checkpoint, spec, *config.quantization, *pool);
      expected.insert(fp8.consumed.begin(), fp8.consumed.end());
      const Tensor memory = placement.allocate(spec.name, DType::kF32, spec.numel());
      backend.copy_from_host(memory, fp8.weight.data());
      *slot_for(w, config, spec.name) = memory.view({spec.shape[0], spec.shape[1]});
      *input_slot_for(w, config, spec.name) = {config.quantization->activations, fp8.input_scale.value_or(0.0f)};
      continue;
    }
    FG_CHECK(checkpoint.contains(spec.name), "{}: missing tensor '{}' (shape {} expected from config.json)",
             checkpoint.dir(), spec.name, shape_string(spec.shape));
    Tensor t = checkpoint.tensor(spec.name);
    std::vector<int64_t> actual(t.shape.begin(), t.shape.begin() + t.rank);
    FG_CHECK(actual == spec.shape,
             "{}: tensor '{}' has shape {} but config.json implies {} (hidden_size {}, intermediate_size {}, "
             "heads {}/{} of head_dim {}, vocab_size {})",
             checkpoint.dir(), spec.name, shape_string(actual), shape_string(spec.shape), config.hidden_size,
             config.intermediate_size, config.num_heads, config.num_kv_heads, config.head_dim, config.vocab_size);
    if (t.dtype == DType::kF8E4M3) {
      const std::string module = spec.name.substr(0, spec.name.rfind('.'));
      if (config.quantization && config.quantization->quantizes(module)) {
        fail("{}: tensor '{}' is F8_E4M3: fullgraph runs FP8 weights in the q/k/v/o and gate/up/down projections "
             "only", checkpoint.dir(), spec.name);
      }
      fail("{}: tensor '{}' is F8_E4M3 but config.json quantizes no such layer (no quantization_config, or the "
           "layer is in its ignore list)", checkpoint.dir(), spec.name);
    }
    FG_CHECK(t.dtype == DType::kBF16 || t.dtype == DType::kF16 || t.dtype == DType::kF32,
             "{}: tensor '{}' has dtype {}; weights must be BF16, F16 or F32", checkpoint.dir(), spec.name,
             dtype_name(t.dtype));
    Tensor* slot = slot_for(w, config, spec.name);
    const DType kept = backend.weight_dtype(t.dtype);
    if (backend.device() == Device::kHost && kept == t.dtype) {
      *slot = t;  // read in place from the mmap, which the checkpoint keeps alive
      continue;
    }
    HostBuffer converted;
    const void* source = t.data;
    if (kept != t.dtype) {
      FG_CHECK(kept == DType::kBF16, "{}: tensor '{}': the {} backend keeps {} weights as {}, which the loader "
               "cannot convert to", checkpoint.dir(), spec.name, backend.name(), dtype_name(t.dtype), dtype_name(kept));
      converted = HostBuffer(static_cast<size_t>(t.numel()) * 2);
      auto* out = reinterpret_cast<uint16_t*>(converted.data());
      const size_t element = dtype_size(t.dtype);
      if (!pool) pool.emplace();
      pool->parallel_for(t.numel(), [&](int64_t begin, int64_t end) {  // an 8B F32 checkpoint is 8e9 values
        convert_to_bf16(static_cast<const char*>(t.data) + begin * element, t.dtype, out + begin, end - begin);
      });
      source = converted.data();
      w.converted_from = t.dtype;
    }
    const Tensor memory = placement.allocate(spec.name, kept, t.numel());
    backend.copy_from_host(memory, source);
    *slot = t;
    slot->dtype = kept;
    slot->data = memory.data;
    slot->device = memory.device;
  }
  for (const std::string& name : checkpoint.names()) {
    if (expected.count(name) || ignorable(name)) continue;
    if (name == "lm_head.weight" && config.tie_word_embeddings) continue;  // tied: the embedding is used
    if (config.quantization && (name.ends_with("_scale") || name.ends_with("_zero_point"))) {
      fail("{}: unexpected tensor '{}': quantization_config ({}, {} activations) reads no such tensor for this "
           "layer", checkpoint.dir(), name, config.quantization->method,
           activation_scheme_name(config.quantization->activations));
    }
    fail("{}: unexpected tensor '{}' for {} (is this checkpoint quantized, MoE or another architecture?)",
         checkpoint.dir(), name, config.architecture_name);
  }
  tie_lm_head(w, config);
  return w;
}

ModelWeights build_weights(const ModelConfig& config, Backend& backend, DType dtype,
                           const std::function<void(const WeightSpec& spec, void* dst)>& fill) {
  ModelWeights w = empty_weights(config);
  WeightPlacement placement(config, backend, w);
  for (const WeightSpec& spec : expected_weights(config)) {
    const int64_t numel = spec.numel();
    HostBuffer host(static_cast<size_t>(numel) * dtype_size(dtype));
    fill(spec, host.data());
    const Tensor memory = placement.allocate(spec.name, dtype, numel);
    backend.copy_from_host(memory, host.data());
    Tensor* slot = slot_for(w, config, spec.name);
    *slot = memory;
    slot->rank = static_cast<int>(spec.shape.size());
    for (size_t d = 0; d < spec.shape.size(); ++d) slot->shape[d] = spec.shape[d];
  }
  tie_lm_head(w, config);
  return w;
}

ModelWeights dummy_weights(const ModelConfig& config, Backend& backend, uint64_t seed) {
  ThreadPool pool;
  const DType dtype = backend.weight_dtype(config.dtype);
  return build_weights(config, backend, dtype, [&](const WeightSpec& spec, void* dst) {
    const int64_t numel = spec.numel();
    const bool is_norm = spec.name.ends_with("norm.weight");
    const bool is_bias = spec.name.ends_with(".bias");
    const double fan_in = spec.shape.size() == 2 ? static_cast<double>(spec.shape[1]) : 1.0;
    const double scale = is_norm ? 0.1 : is_bias ? 0.1 : 1.0 / std::sqrt(fan_in);
    const double center = is_norm ? 1.0 : 0.0;
    const uint64_t stream = mix(seed ^ hash_name(spec.name));
    // Each value is a function of its index alone, so the threads' split changes nothing (an 8B
    // shape is 8e9 values: minutes on one core).
    pool.parallel_for(numel, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        // uniform in [-1, 1) from the top 53 bits
        const double u = static_cast<double>(mix(stream + static_cast<uint64_t>(i)) >> 11) * 0x1p-52 - 1.0;
        const float value = static_cast<float>(center + scale * u);
        switch (dtype) {
          case DType::kBF16: static_cast<uint16_t*>(dst)[i] = float_to_bf16(value); break;
          case DType::kF16: static_cast<uint16_t*>(dst)[i] = float_to_f16(value); break;
          default: static_cast<float*>(dst)[i] = value; break;
        }
      }
    });
  });
}

}  // namespace fg

