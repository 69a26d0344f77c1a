// bench/kernels/decode_step_bench.cpp — the decode_step table of `bench kernels`: the model's
// forward on random weights (the Llama shapes and Qwen3-0.6B), context 512 per request, batches
// 1, 8 and 64, timed eagerly (what `generate --device cuda` runs) and, where the attention backend
// allows, as one graph replay; the replays of the batches asked for broken down by kernel
// (step_breakdown.h). scripts/device/ab_table.py parses this table's text: keep its format.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/common/cuda_timing.h"
#include "bench/common/random_fill.h"
#include "bench/kernels/bench_support.h"
#include "bench/kernels/step_breakdown.h"
#include "bench/kernels/tables.h"
#include "core/error.h"
#include "model/llama_model.h"
#include "model/named_shapes.h"
#include "runner/step_builder.h"

namespace fg::bench {

namespace {

ModelConfig config_of(const ModelShape& m) {
  ModelConfig c;
  c.architecture_name = "LlamaForCausalLM";
  c.vocab_size = m.vocab;
  c.hidden_size = m.hidden;
  c.intermediate_size = m.intermediate;
  c.num_layers = m.layers;
  c.num_heads = m.heads;
  c.num_kv_heads = m.kv_heads;
  c.head_dim = m.head_dim;
  c.max_position_embeddings = 8192;
  c.rms_norm_eps = 1e-5;
  c.rope.theta = 500000.0;
  c.tie_word_embeddings = m.tied;
  return c;
}

// The decode-step table's models: the matmul tables' Llama shapes, and Qwen3-0.6B (its named
// shape, RoPE table cut to 8192 positions) for the q/k-norm path.
std::vector<std::pair<std::string, ModelConfig>> decode_step_models() {
  std::vector<std::pair<std::string, ModelConfig>> models;
  for (const ModelShape& m : model_shapes()) models.emplace_back(m.name, config_of(m));
  ModelConfig qwen3 = named_model_config("qwen3-0.6b");
  qwen3.max_position_embeddings = 8192;
  models.emplace_back("Qwen3-0.6B", qwen3);
  return models;
}

// Random weights made on the device (the host dummy generator would take minutes for 8B).
ModelWeights random_weights(CudaBackend& backend, const ModelConfig& c) {
  FG_CHECK(!c.qkv_bias, "bench kernels: random weights have no q/k/v biases ({})", c.architecture_name);
  ModelWeights w;
  RandomTensors random{backend};
  auto matrix = [&](int64_t rows, int64_t cols) {
    return random.bf16({rows, cols}, 0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
  };
  auto norm = [&](int64_t size) { return random.bf16({size}, 1.0f, 0.1f); };
  w.embed_tokens = matrix(c.vocab_size, c.hidden_size);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    LayerWeights L;
    L.input_norm = norm(c.hidden_size);
    // q/k/v and gate/up back to back, as the model loader places them (one matmul each).
    const Tensor qkv = matrix(c.q_size() + 2 * c.kv_size(), c.hidden_size);
    L.q_proj = qkv.rows(0, c.q_size());
    L.k_proj = qkv.rows(c.q_size(), c.kv_size());
    L.v_proj = qkv.rows(c.q_size() + c.kv_size(), c.kv_size());
    if (c.qk_norm) {
      L.q_norm = norm(c.head_dim);
      L.k_norm = norm(c.head_dim);
    }
    L.o_proj = matrix(c.hidden_size, c.q_size());
    L.post_attention_norm = norm(c.hidden_size);
    const Tensor gate_up = matrix(2 * c.intermediate_size, c.hidden_size);
    L.gate_proj = gate_up.rows(0, c.intermediate_size);
    L.up_proj = gate_up.rows(c.intermediate_size, c.intermediate_size);
    L.down_proj = matrix(c.hidden_size, c.intermediate_size);
    w.layers.push_back(L);
  }
  w.final_norm = norm(c.hidden_size);
  w.lm_head = c.tie_word_embeddings ? w.embed_tokens : matrix(c.vocab_size, c.hidden_size);
  for (const auto& m : random.memory()) w.keep_alive.push_back(m);
  return w;
}

// The model's linears in FP8, quantized per output channel on the device from its BF16 weights
// (q/k/v and gate/up spans quantized whole, so their parts stay back to back), inputs rounded per
// token: what --quantization fp8 makes of these weights. The BF16 copies stay allocated.
void quantize_linears_fp8(CudaBackend& backend, ModelWeights& w) {
  const auto quantize = [&](const Tensor& first, int64_t rows) {
    const Tensor span(first.data, DType::kBF16, {rows, first.dim(1)}, Device::kCuda);
    Allocation q = backend.allocate(DType::kF8E4M3, {rows, first.dim(1)});
    Allocation scales = backend.allocate(DType::kF32, {rows});
    backend.quantize_weight_fp8(span, q.tensor, scales.tensor);
    w.keep_alive.push_back(q.memory);
    w.keep_alive.push_back(scales.memory);
    return std::pair{q.tensor, scales.tensor};
  };
  const LinearInput per_token{ActivationScheme::kDynamicPerToken, 0.0f};
  for (LayerWeights& L : w.layers) {
    const int64_t q = L.q_proj.dim(0), kv = L.k_proj.dim(0), I = L.gate_proj.dim(0);
    const auto [qkv, qkv_scales] = quantize(L.q_proj, q + 2 * kv);
    L.q_proj = qkv.rows(0, q), L.k_proj = qkv.rows(q, kv), L.v_proj = qkv.rows(q + kv, kv);
    L.q_scale = qkv_scales.rows(0, q), L.k_scale = qkv_scales.rows(q, kv), L.v_scale = qkv_scales.rows(q + kv, kv);
    std::tie(L.o_proj, L.o_scale) = quantize(L.o_proj, L.o_proj.dim(0));
    const auto [gate_up, gate_up_scales] = quantize(L.gate_proj, 2 * I);
    L.gate_proj = gate_up.rows(0, I), L.up_proj = gate_up.rows(I, I);
    L.gate_scale = gate_up_scales.rows(0, I), L.up_scale = gate_up_scales.rows(I, I);
    std::tie(L.down_proj, L.down_scale) = quantize(L.down_proj, L.down_proj.dim(0));
    L.q_in = L.k_in = L.v_in = L.o_in = L.gate_in = L.up_in = L.down_in = per_token;
  }
  backend.synchronize();
}

// The table of a step breakdown (step_breakdown.h), kernels in the order they first run.
nlohmann::json print_breakdown(const std::string& model, int64_t batch, const StepBreakdown& b) {
  fmt::print("  where the graph replay of {}'s batch-{} step goes ({:.1f} us; each kernel's time added to the\n"
             "  chain, from replays of its prefixes; the first kernel's includes the graph launch):\n",
             model, batch, b.step_us);
  fmt::print("  {:<64} {:>8} {:>9} {:>9} {:>6} {:>5}\n", "kernel", "launches", "us", "us each", "share", "regs");
  nlohmann::json rows = nlohmann::json::array();
  for (const KernelShare& k : b.kernels) {
    fmt::print("  {:<64} {:>8} {:>9.1f} {:>9.2f} {:>5.1f}% {:>5}\n", k.name, k.launches, k.us, k.us / k.launches,
               100 * k.us / b.step_us, k.registers >= 0 ? std::to_string(k.registers) : "-");
    rows.push_back({{"kernel", k.name}, {"launches", k.launches}, {"us", k.us},
                    {"registers", k.registers >= 0 ? nlohmann::json(k.registers) : nlohmann::json()}});
  }
  return {{"step_us", b.step_us}, {"kernels", rows}};
}

}  // namespace

nlohmann::json bench_decode_steps(CudaBackend& backend, const std::string& attention,
                                  const std::vector<int64_t>& breakdown_batches, bool fp8) {
  constexpr int64_t kContext = 512, kBlockSize = 16, kMaxBatch = 64;
  constexpr int64_t kBlocksPerRequest = kContext / kBlockSize;
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nDecode step, random weights{}, context {} per request, {} attention\n",
             fp8 ? " (linears in FP8, per-channel scales, inputs per token; LM head BF16)" : "", kContext, attention);
  fmt::print("{:<14} {:>5} | {:>10} {:>10}\n", "model", "batch", "eager ms", "graph ms");
  for (const auto& [name, c] : decode_step_models()) {
    backend.set_attention(make_attention_backend(attention, attention_limits(c, kMaxBatch, kMaxBatch, kContext, kBlockSize)));
    ModelWeights weights = random_weights(backend, c);
    if (fp8) quantize_linears_fp8(backend, weights);
    LlamaModel model(c, std::move(weights), backend, kMaxBatch, kMaxBatch);
    KvCache kv = allocate_kv_cache(backend, c, 1 + kMaxBatch * kBlocksPerRequest, kBlockSize, DType::kBF16);
    for (size_t l = 0; l < kv.layers.size(); ++l)
      for (const Tensor* t : {&kv.layers[l].k, &kv.layers[l].v})
        launch_fill_random_bf16(static_cast<__nv_bfloat16*>(t->data), t->numel(), 1000 + l, 0.0f, 1.0f,
                                backend.stream());

    for (int64_t batch : {1, 8, 64}) {
      // One decode token per request, each over blocks of its own.
      std::vector<int32_t> tokens(static_cast<size_t>(batch)), blocks(static_cast<size_t>(batch * kBlocksPerRequest));
      std::vector<ScheduledRequest> requests(static_cast<size_t>(batch));
      for (int64_t r = 0; r < batch; ++r) {
        tokens[r] = static_cast<int32_t>((r * 7919) % c.vocab_size);
        for (int64_t b = 0; b < kBlocksPerRequest; ++b)
          blocks[r * kBlocksPerRequest + b] = static_cast<int32_t>(1 + r * kBlocksPerRequest + b);
        requests[r].token_ids = std::span<const int32_t>(&tokens[r], 1);
        requests[r].num_computed = kContext - 1;
        requests[r].block_ids = std::span<const int32_t>(blocks).subspan(r * kBlocksPerRequest, kBlocksPerRequest);
      }
      DeviceStep step = upload_step(backend, requests, kBlockSize, kBlocksPerRequest);
      // Every request runs one query token, as the runner tells the attention backend for a
      // uniform-decode bucket (split_kv serves only those; without it the step runs its flash).
      step.views.inputs.attention.uniform_query_len = 1;
      const double eager_ms = median_us(backend.stream(), 20, 3, [&] { model.forward(step.views.inputs, kv); }) * 1e-3;
      double graph_ms = NAN;
      try {
        backend.begin_capture();
        model.forward(step.views.inputs, kv);
        std::unique_ptr<Graph> graph = backend.end_capture();
        graph_ms = median_us(backend.stream(), 20, 3, [&] { graph->replay(); }) * 1e-3;
      } catch (const std::exception& e) {
        fmt::print("  (graph capture failed: {})\n", e.what());
        try {
          backend.end_capture();  // ends the broken capture; its error is the one above
        } catch (const std::exception&) {
        }
        (void)cudaGetLastError();
      }
      fmt::print("{:<14} {:>5} | {:>10.3f} {:>10.3f}\n", name, batch, eager_ms, graph_ms);
      rows.push_back({{"model", name}, {"batch", batch}, {"context", kContext}, {"attention", attention},
                      {"weights", fp8 ? "fp8" : "bf16"},
                      {"eager_ms", eager_ms},
                      {"graph_ms", std::isnan(graph_ms) ? nlohmann::json() : nlohmann::json(graph_ms)}});
      const bool broken_down =
          std::find(breakdown_batches.begin(), breakdown_batches.end(), batch) != breakdown_batches.end();
      if (broken_down && !std::isnan(graph_ms))
        rows.back()["breakdown"] = print_breakdown(
            name, batch, breakdown_captured_step(backend.stream(), [&] { model.forward(step.views.inputs, kv); }, 30));
    }
    backend.synchronize();
  }
  return rows;
}

}  // namespace fg::bench
