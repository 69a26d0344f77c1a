// cli/engine_setup.h — everything an engine needs, built from command-line options: backend,
// model (a checkpoint, the built-in default, or a named shape with dummy weights), KV cache sized
// from --kv-cache-blocks or --gpu-memory-utilization, the full-graph runner with its graphs, the
// block manager and the engine. Shared by `generate --prompts` and `serve`.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "engine/engine.h"
#include "model/llama_model.h"
#include "runner/model_runner.h"
#include "tokenizer/chat_template.h"

namespace fg::cli {

struct EngineSetupOptions {
  std::string model_dir;     // empty: the built-in model, or --shape
  std::string shape;         // a named shape (dummy weights, no tokenizer unless built-in)
  std::string load_format = "auto";
  std::string device = "cpu";
  std::string attention = "auto";
  int threads = 0;
  int64_t block_size = 16;
  bool rope_bf16 = false;
  bool enforce_eager = false;
  bool check_graph_inputs = false;
  int64_t max_num_batched_tokens = 512;
  int64_t max_num_seqs = 64;
  int64_t max_model_len = 0;  // 0: the model's
  std::string cuda_graph_sizes;
  int64_t kv_cache_blocks = 0;            // 0: from the memory budget
  double gpu_memory_utilization = 0.9;    // CUDA: share of device memory the process may use
  double cpu_kv_cache_gib = 2.0;          // CPU: KV budget when --kv-cache-blocks is not given
  bool enable_prefix_caching = true;
  bool batch_invariant = false;  // Backend::set_batch_invariant
  uint64_t seed = 0;
  bool progress = true;  // progress lines on stderr (graph capture, batches)
};

// Adds the options above to a subcommand.
void add_engine_options(CLI::App& cmd, EngineSetupOptions& o);

struct EngineSetup {
  std::unique_ptr<Backend> backend;
  ModelConfig config;
  std::string source;  // the folder, the shape or "built-in default"
  std::unique_ptr<Tokenizer> tokenizer;  // null for shapes
  ChatTemplateConfig chat;
  std::unique_ptr<LlamaModel> model;
  KvCache kv;
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<KvBlockManager> blocks;
  std::unique_ptr<Engine> engine;
  std::vector<int32_t> eos_token_ids;  // config.json's and generation_config.json's
  std::string attention;               // the GPU attention chosen ("" on the CPU)
  int64_t max_model_len = 0;           // effective: --max-model-len or the model's
  int64_t max_num_seqs = 0;            // effective: --max-num-seqs capped by the token budget
};

// The backend --device names: the CPU reference with `threads` threads, or CUDA device 0.
std::unique_ptr<Backend> make_backend(const std::string& device, int threads, const GpuBackendFactory& gpu);

// Builds it all; `log` receives the start-up report (KV pool, graphs).
std::unique_ptr<EngineSetup> build_engine(const EngineSetupOptions& o, const GpuBackendFactory& gpu,
                                          const std::function<void(const std::string&)>& log);

}  // namespace fg::cli
