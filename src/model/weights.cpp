// model/weights.cpp — weight names and shapes per config, checkpoint loading and dummy weights.
#include "model/weights.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/host_buffer.h"
#include "core/log.h"
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

// Where an FP8 linear's scales and input rounding go in ModelWeights.
struct Fp8Slots {
  Tensor* scale;
  LinearInput* input;
};
Fp8Slots fp8_slots_for(ModelWeights& w, const ModelConfig& config, const std::string& name) {
  struct Fields {
    const char* suffix;
    Tensor LayerWeights::*scale;
    LinearInput LayerWeights::*input;
  };
  static const Fields fields[] = {
      {"self_attn.q_proj.weight", &LayerWeights::q_scale, &LayerWeights::q_in},
      {"self_attn.k_proj.weight", &LayerWeights::k_scale, &LayerWeights::k_in},
      {"self_attn.v_proj.weight", &LayerWeights::v_scale, &LayerWeights::v_in},
      {"self_attn.o_proj.weight", &LayerWeights::o_scale, &LayerWeights::o_in},
      {"mlp.gate_proj.weight", &LayerWeights::gate_scale, &LayerWeights::gate_in},
      {"mlp.up_proj.weight", &LayerWeights::up_scale, &LayerWeights::up_in},
      {"mlp.down_proj.weight", &LayerWeights::down_scale, &LayerWeights::down_in},
  };
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const std::string p = layer_prefix(l);
    if (name.rfind(p, 0) != 0) continue;
    for (const Fields& f : fields)
      if (name.substr(p.size()) == f.suffix) return {&(w.layers[l].*f.scale), &(w.layers[l].*f.input)};
  }
  FG_ASSERT(false);
}

// Whether the quantized linear `weight_name` stays FP8 on the device: its input is rounded too
// (weight-only FP8 runs dequantized), and every member of its q/k/v or gate/up group is quantized
// (a group runs as one matmul of one kind).
bool keeps_fp8(const QuantizationConfig& q, const std::string& weight_name) {
  if (q.activations == ActivationScheme::kNone) return false;
  const std::string module = weight_name.substr(0, weight_name.size() - std::string(".weight").size());
  const auto sibling = [&](const char* from, const char* to) {
    return module.substr(0, module.size() - std::string(from).size()) + to;
  };
  for (const auto& members : {std::vector<const char*>{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                              std::vector<const char*>{"mlp.gate_proj", "mlp.up_proj"}}) {
    for (const char* member : members) {
      if (!module.ends_with(member)) continue;
      for (const char* other : members)
        if (!q.quantizes(sibling(member, other))) return false;
    }
  }
  return q.quantizes(module);
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

// A tied LM head is the embedding, or under tensor parallelism the rank's row slice of it.
void tie_lm_head(ModelWeights& w, const ModelConfig& config, const TensorParallelShard& shard) {
  if (!config.tie_word_embeddings) return;
  const WeightSlice slice = weight_slice(config, shard, "lm_head.weight");
  w.lm_head = slice.whole() ? w.embed_tokens : w.embed_tokens.rows(slice.begin, slice.count);
}

void refuse_sharded_fp8(const ModelConfig& config, const TensorParallelShard& shard) {
  FG_CHECK(!shard.active() || !config.quantization,
           "--tensor-parallel-size {}: FP8 models (FP8 checkpoints and --quantization fp8) are not sharded yet; run "
           "them with --tensor-parallel-size 1", shard.size);
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
  // An FP8 linear's scales ("....weight_scale") are grouped as its weights are, in a group of their own.
  if (name.ends_with(".weight_scale")) {
    const std::string group = group_of(name.substr(0, name.size() - std::string("_scale").size()));
    return group.empty() ? group : group + "_scale";
  }
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
      if (config.quantization && spec.shape.size() == 2) {  // room for FP8 scales, [rows] per linear
        Group& scales = groups_[group + "_scale"];
        offsets_[spec.name + "_scale"] = scales.numel;
        scales.numel += spec.shape[0];
      }
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

// An FP8 linear's e4m3 weight (host bytes, [rows, cols]) and channel scales (host, [rows]) placed on
// the backend, with its input rounding.
void place_fp8(WeightPlacement& placement, Backend& backend, ModelWeights& w, const ModelConfig& config,
               const WeightSpec& spec, const void* e4m3, const float* channel_scales, LinearInput input) {
  const Tensor memory = placement.allocate(spec.name, DType::kF8E4M3, spec.numel());
  const Tensor scales = placement.allocate(spec.name + "_scale", DType::kF32, spec.shape[0]);
  backend.copy_from_host(memory, e4m3);
  backend.copy_from_host(scales, channel_scales);
  *slot_for(w, config, spec.name) = memory.view({spec.shape[0], spec.shape[1]});
  const Fp8Slots slots = fp8_slots_for(w, config, spec.name);
  *slots.scale = scales;
  *slots.input = input;
}

// Host values of a float weight in the backend's weight dtype: `values` itself, or a converted copy
// in `storage`.
const void* in_weight_dtype(Backend& backend, const WeightSpec& spec, const void* values, DType dtype,
                            ThreadPool& pool, HostBuffer& storage) {
  const DType kept = backend.weight_dtype(dtype);
  if (kept == dtype) return values;
  FG_CHECK(kept == DType::kBF16, "tensor '{}': the {} backend keeps {} weights as {}, which the loader cannot "
           "convert to", spec.name, backend.name(), dtype_name(dtype), dtype_name(kept));
  storage = HostBuffer(static_cast<size_t>(spec.numel()) * 2);
  auto* out = reinterpret_cast<uint16_t*>(storage.data());
  const size_t element = dtype_size(dtype);
  pool.parallel_for(spec.numel(), [&](int64_t begin, int64_t end) {  // an 8B F32 checkpoint is 8e9 values
    convert_to_bf16(static_cast<const char*>(values) + begin * element, dtype, out + begin, end - begin);
  });
  return storage.data();
}

// A float weight (host values of `dtype`) placed in the backend's weight dtype. Returns whether
// it was converted.
bool place_converted(WeightPlacement& placement, Backend& backend, ModelWeights& w, const ModelConfig& config,
                     const WeightSpec& spec, const void* values, DType dtype, ThreadPool& pool) {
  HostBuffer storage;
  const void* source = in_weight_dtype(backend, spec, values, dtype, pool, storage);
  const DType kept = backend.weight_dtype(dtype);
  const Tensor memory = placement.allocate(spec.name, kept, spec.numel());
  backend.copy_from_host(memory, source);
  Tensor* slot = slot_for(w, config, spec.name);
  *slot = memory;
  slot->rank = static_cast<int>(spec.shape.size());
  for (size_t d = 0; d < spec.shape.size(); ++d) slot->shape[d] = spec.shape[d];
  return kept != dtype;
}

// --quantization fp8: float linears quantized on the backend as they load (per output channel,
// Backend::quantize_weight_fp8), their inputs rounded per token; the log says how long it took.
class LoadTimeQuantizer {
 public:
  explicit LoadTimeQuantizer(Backend& backend) : backend_(backend) {}

  void add(WeightPlacement& placement, ModelWeights& w, const ModelConfig& config, const WeightSpec& spec,
           const void* values, DType dtype, ThreadPool& pool) {
    const auto start = std::chrono::steady_clock::now();
    // The float weight goes to the backend whole (in its weight dtype), then into the FP8 slots.
    HostBuffer storage;
    const void* host = in_weight_dtype(backend_, spec, values, dtype, pool, storage);
    const Allocation source = backend_.allocate(backend_.weight_dtype(dtype), {spec.shape[0], spec.shape[1]});
    backend_.copy_from_host(source.tensor, host);
    const Tensor q = placement.allocate(spec.name, DType::kF8E4M3, spec.numel()).view({spec.shape[0], spec.shape[1]});
    const Tensor scales = placement.allocate(spec.name + "_scale", DType::kF32, spec.shape[0]);
    backend_.quantize_weight_fp8(source.tensor, q, scales);
    backend_.synchronize();  // the float copy is freed next
    *slot_for(w, config, spec.name) = q;
    const Fp8Slots slots = fp8_slots_for(w, config, spec.name);
    *slots.scale = scales;
    *slots.input = {ActivationScheme::kDynamicPerToken, 0.0f};
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++count_;
    bytes_ += spec.numel();
  }

  void report() const {
    if (count_ == 0) return;
    log::info("--quantization fp8: {} linears ({:.2f} GB of e4m3) quantized per output channel on the {} backend in "
              "{:.2f} s (upload included)", count_, static_cast<double>(bytes_) / 1e9, backend_.name(), seconds_);
  }

 private:
  Backend& backend_;
  int count_ = 0;
  int64_t bytes_ = 0;
  double seconds_ = 0.0;
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
                          Backend& backend, const TensorParallelShard& shard) {
  refuse_sharded_fp8(config, shard);
  const ModelConfig rank_config = shard_config(config, shard);
  const Checkpoint& checkpoint = *checkpoint_ptr;
  ModelWeights w = empty_weights(config);
  w.keep_alive.push_back(checkpoint_ptr);
  WeightPlacement placement(rank_config, backend, w);
  std::optional<ThreadPool> pool;  // started by the first tensor that needs converting
  LoadTimeQuantizer quantizer(backend);
  std::set<std::string> expected;
  for (const WeightSpec& spec : expected_weights(config)) {
    expected.insert(spec.name);
    const std::optional<std::string> linear = quantizable_linear(spec.name);
    if (config.quantization && !config.quantization->quantize_at_load && linear &&
        config.quantization->quantizes(*linear)) {
      const Fp8Linear fp8 = read_fp8_linear(checkpoint, spec, *config.quantization);
      expected.insert(fp8.consumed.begin(), fp8.consumed.end());
      if (keeps_fp8(*config.quantization, spec.name)) {
        place_fp8(placement, backend, w, config, spec, fp8.weight, fp8.channel_scales.data(),
                  {config.quantization->activations, fp8.input_scale.value_or(0.0f)});
        continue;
      }
      if (!pool) pool.emplace();
      const HostBuffer dequantized = dequantize_fp8_linear(fp8, spec.shape[0], spec.shape[1], *pool);
      place_converted(placement, backend, w, config, spec, dequantized.data(), DType::kF32, *pool);
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
    if (config.quantization && config.quantization->quantize_at_load && linear) {
      if (!pool) pool.emplace();
      quantizer.add(placement, w, config, spec, t.data, t.dtype, *pool);
      continue;
    }
    const bool in_place = backend.device() == Device::kHost && backend.weight_dtype(t.dtype) == t.dtype;
    if (const WeightSlice slice = weight_slice(config, shard, spec.name); !slice.whole()) {
      if (in_place && slice.dim == 0) {
        *slot_for(w, config, spec.name) = t.rows(slice.begin, slice.count);  // the owned rows of the mmap
        continue;
      }
      const WeightSpec owned{spec.name, slice_shape(spec.shape, slice)};
      HostBuffer owned_values(static_cast<size_t>(owned.numel()) * dtype_size(t.dtype));
      copy_weight_slice(t.data, t.dtype, spec.shape, slice, owned_values.data());
      if (!pool) pool.emplace();
      if (place_converted(placement, backend, w, rank_config, owned, owned_values.data(), t.dtype, *pool))
        w.converted_from = t.dtype;
      continue;
    }
    if (in_place) {
      *slot_for(w, config, spec.name) = t;  // read in place from the mmap, which the checkpoint keeps alive
      continue;
    }
    if (!pool) pool.emplace();
    if (place_converted(placement, backend, w, config, spec, t.data, t.dtype, *pool)) w.converted_from = t.dtype;
  }
  if (config.quantization && config.quantization->kv_cache_scales) {
    for (int64_t l = 0; l < config.num_layers; ++l) {
      const std::vector<std::string> read = read_kv_cache_scales(checkpoint, l, w.layers[static_cast<size_t>(l)]);
      expected.insert(read.begin(), read.end());
    }
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
  quantizer.report();
  tie_lm_head(w, config, shard);
  return w;
}

ModelWeights build_weights(const ModelConfig& config, Backend& backend, DType dtype,
                           const std::function<void(const WeightSpec& spec, void* dst)>& fill,
                           const TensorParallelShard& shard) {
  refuse_sharded_fp8(config, shard);
  ModelWeights w = empty_weights(config);
  WeightPlacement placement(shard_config(config, shard), backend, w);
  LoadTimeQuantizer quantizer(backend);
  std::optional<ThreadPool> pool;
  for (const WeightSpec& spec : expected_weights(config)) {
    const int64_t numel = spec.numel();
    HostBuffer host(static_cast<size_t>(numel) * dtype_size(dtype));
    fill(spec, host.data());
    // Built weights carry no scales of their own: an FP8 config's linears (dummy weights of an FP8
    // checkpoint, or --quantization fp8) are quantized here, their inputs rounded per token.
    const std::optional<std::string> linear = quantizable_linear(spec.name);
    if (config.quantization && linear && config.quantization->quantizes(*linear)) {
      if (!pool) pool.emplace();
      quantizer.add(placement, w, config, spec, host.data(), dtype, *pool);
      continue;
    }
    const WeightSlice slice = weight_slice(config, shard, spec.name);
    const WeightSpec owned{spec.name, slice_shape(spec.shape, slice)};
    HostBuffer owned_values;
    if (!slice.whole()) {
      owned_values = HostBuffer(static_cast<size_t>(owned.numel()) * dtype_size(dtype));
      copy_weight_slice(host.data(), dtype, spec.shape, slice, owned_values.data());
    }
    const Tensor memory = placement.allocate(spec.name, dtype, owned.numel());
    backend.copy_from_host(memory, slice.whole() ? host.data() : owned_values.data());
    Tensor* slot = slot_for(w, config, spec.name);
    *slot = memory;
    slot->rank = static_cast<int>(owned.shape.size());
    for (size_t d = 0; d < owned.shape.size(); ++d) slot->shape[d] = owned.shape[d];
  }
  quantizer.report();
  tie_lm_head(w, config, shard);
  return w;
}

ModelWeights dummy_weights(const ModelConfig& config, Backend& backend, uint64_t seed,
                           const TensorParallelShard& shard) {
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
  }, shard);
}

}  // namespace fg

