// model/gguf_weights.cpp — GGUF tensors → ModelWeights (see gguf_weights.h).
//
// Why the permutation: ggml's RoPE (the "normal" mode llama.cpp uses for llama) rotates adjacent
// pairs (x[2j], x[2j+1]) of each head, while Hugging Face's rotates the halves (x[j], x[j+D/2]).
// llama.cpp's converter therefore reorders each head's rows of the q and k projections so that
// ggml's rotation computes Hugging Face's: LlamaModel.permute views a head's D rows as (2, D/2)
// and transposes them to (D/2, 2). fullgraph rotates halves, as Hugging Face does, so the loader
// applies the inverse, view (D/2, 2) → (2, D/2), as transformers' GGUF loader does
// (reverse_permute_weights). qwen2 and qwen3 use ggml's NeoX mode (halves), and their
// converters do not permute.
#include "model/gguf_weights.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "model/gguf.h"
#include "model/gguf_dequant.h"

namespace fg {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Hugging Face module path within a layer → llama.cpp's tensor name within a block.
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"input_layernorm", "attn_norm"},     {"post_attention_layernorm", "ffn_norm"},
    {"self_attn.q_proj", "attn_q"},       {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},       {"self_attn.o_proj", "attn_output"},
    {"self_attn.q_norm", "attn_q_norm"},  {"self_attn.k_norm", "attn_k_norm"},
    {"mlp.gate_proj", "ffn_gate"},        {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

// The head count whose rows the converter permuted in `hf_name`, or 0 when it left them alone.
int64_t permuted_heads(const ModelConfig& config, const std::string& hf_name) {
  if (config.architecture != Architecture::kLlama) return 0;
  if (hf_name.find(".self_attn.q_proj.") != std::string::npos) return config.num_heads;
  if (hf_name.find(".self_attn.k_proj.") != std::string::npos) return config.num_kv_heads;
  return 0;
}

std::string describe_dims(const ModelConfig& c, const std::string& arch) {
  return fmt::format("{0}.embedding_length {1}, {0}.feed_forward_length {2}, heads {3}/{4} of {5}, vocab {6}", arch,
                     c.hidden_size, c.intermediate_size, c.num_heads, c.num_kv_heads, c.head_dim, c.vocab_size);
}

}  // namespace

std::string GgufLoadReport::describe() const {
  std::string types;
  for (const auto& [name, count] : tensors_by_type) types += fmt::format("{}{} ×{}", types.empty() ? "" : ", ", name, count);
  return fmt::format("{} → {} in {:.2f} s", types, dtype_name(dtype), seconds);
}

std::string gguf_tensor_name(const std::string& hf_name) {
  if (hf_name == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf_name == "model.norm.weight") return "output_norm.weight";
  if (hf_name == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  FG_ASSERT(hf_name.starts_with(prefix));
  const size_t dot = hf_name.find('.', prefix.size());
  const size_t kind = hf_name.rfind('.');
  FG_ASSERT(dot != std::string::npos && kind > dot);
  const std::string layer = hf_name.substr(prefix.size(), dot - prefix.size());
  const std::string module = hf_name.substr(dot + 1, kind - dot - 1);
  for (const auto& [ours, ggml] : kLayerNames)
    if (module == ours) return fmt::format("blk.{}.{}{}", layer, ggml, hf_name.substr(kind));
  FG_ASSERT(false);
}

void unpermute_rope_rows(std::span<std::byte> data, int64_t heads, size_t row_bytes) {
  FG_ASSERT(heads > 0 && row_bytes > 0 && data.size() % row_bytes == 0);
  const int64_t rows = static_cast<int64_t>(data.size() / row_bytes);
  FG_ASSERT(rows % heads == 0 && (rows / heads) % 2 == 0);
  const int64_t d = rows / heads, half = d / 2;
  const std::vector<std::byte> file(data.begin(), data.end());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < half; ++j)
        std::memcpy(data.data() + static_cast<size_t>(h * d + i * half + j) * row_bytes,
                    file.data() + static_cast<size_t>(h * d + 2 * j + i) * row_bytes, row_bytes);
}

ModelWeights load_gguf_weights(const ModelConfig& config, std::shared_ptr<const GgufFile> file_ptr, Backend& backend,
                               GgufLoadReport* report) {
  const GgufFile& file = *file_ptr;
  const auto start = std::chrono::steady_clock::now();
  const DType dtype = backend.weight_dtype(DType::kF32);
  FG_CHECK(dtype == DType::kF32 || dtype == DType::kBF16,
           "{}: the {} backend keeps weights as {}; GGUF tensors dequantize to F32 or BF16", file.path(),
           backend.name(), dtype_name(dtype));

  // Unexpected tensors first: a file of another layout fails before minutes of dequantizing.
  std::set<std::string> expected;
  for (const WeightSpec& spec : expected_weights(config)) expected.insert(gguf_tensor_name(spec.name));
  for (const GgufTensorInfo& t : file.tensors())
    FG_CHECK(expected.count(t.name) != 0,
             "{}: unexpected tensor '{}' for a {} model of {} layers (is it a mixture of experts, or another "
             "architecture?)",
             file.path(), t.name, config.architecture_name, config.num_layers);

  GgufLoadReport local;
  GgufLoadReport& r = report != nullptr ? *report : local;
  r = {};
  r.dtype = dtype;
  ThreadPool pool;
  ModelWeights w = build_weights(config, backend, dtype, [&](const WeightSpec& spec, void* dst) {
    const std::string name = gguf_tensor_name(spec.name);
    const GgufTensorInfo* info = file.find(name);
    FG_CHECK(info != nullptr, "{}: missing tensor '{}' ({}, shape {} expected from the GGUF metadata)", file.path(),
             name, spec.name, shape_string(spec.shape));
    FG_CHECK(info->shape == spec.shape, "{}: tensor '{}' ({}) has shape {} but the GGUF metadata implies {} ({})",
             file.path(), name, spec.name, shape_string(info->shape), shape_string(spec.shape),
             describe_dims(config, config.architecture_name));
    const std::string what = fmt::format("{}: tensor '{}'", file.path(), name);
    check_dequantizable(info->type, what);
    const std::span<const std::byte> bytes = file.bytes(*info);
    const size_t numel = static_cast<size_t>(spec.numel());
    if (dtype == DType::kF32)
      dequantize_to_f32(info->type, bytes, std::span(static_cast<float*>(dst), numel), what, &pool);
    else
      dequantize_to_bf16(info->type, bytes, std::span(static_cast<uint16_t*>(dst), numel), what, &pool);
    if (const int64_t heads = permuted_heads(config, spec.name); heads > 0) {
      const size_t row_bytes = static_cast<size_t>(info->row_length()) * dtype_size(dtype);
      // A bias is one element per row.
      unpermute_rope_rows(std::span(static_cast<std::byte*>(dst), numel * dtype_size(dtype)), heads,
                          spec.shape.size() == 1 ? dtype_size(dtype) : row_bytes);
    }
    ++r.tensors_by_type[std::string(ggml_type_name(info->type))];
  });
  backend.synchronize();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return w;
}

}  // namespace fg
