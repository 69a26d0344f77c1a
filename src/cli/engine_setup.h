// cli/engine_setup.h — everything an engine needs, built from command-line options: backend,
// model (a checkpoint folder or GGUF file, a Hugging Face cache name, the built-in tiny model, or
// a named shape with dummy weights), tokenizer and chat template, KV cache sized from
// --kv-cache-blocks or --gpu-memory-utilization, the full-graph runner with its graphs, the block
// manager and the engine. Shared by `generate`, `serve` and `chat`, which take the same model
// options (vLLM's names).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "engine/engine.h"
#include "model/generation_config.h"
#include "model/llama_model.h"
#include "model/model_loader.h"
#include "runner/model_runner.h"
#include "runner/tensor_parallel_runner.h"
#include "server/model_context.h"
#include "tokenizer/chat_template.h"

namespace fg::cli {

struct EngineSetupOptions {
  std::string model_dir;  // --model as given, or the default (default_model.h); empty: the built-in model, or --shape
  // vLLM's model options (cli/model_source.h, cli/dtype_option.h say what each does here).
  std::string revision;                    // branch, tag or commit of a Hugging Face cache model
  std::string tokenizer;                   // a folder (or ORG/NAME) with tokenizer.json, tokenizer_config.json
  std::string chat_template;               // a file or an inline template; replaces the tokenizer's
  std::string generation_config = "auto";  // auto | vllm | a folder holding generation_config.json
  std::string dtype = "auto";              // auto | bfloat16 | float16 | float32 (and vLLM's half, float)
  std::string shape;         // a named shape (dummy weights, no tokenizer unless built-in)
  std::string load_format = "auto";
  std::string quantization;  // "" | fp8: quantize the float linears at load (LoadOptions::quantize_fp8)
  std::string kv_cache_dtype = "auto";  // auto | bf16 | fp8 (kv_cache_dtype())
  std::string device = "cpu";
  std::string attention = "auto";
  int threads = 0;
  int tensor_parallel_size = 1;  // ranks the model is split over (cli/tensor_parallel_setup.h)
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
  std::string scheduling_policy = "fcfs";  // fcfs | priority (vLLM's)
  uint64_t seed = 0;
  bool progress = true;  // progress lines on stderr (graph capture, batches)
};

// Adds the options above to a subcommand.
void add_engine_options(CLI::App& cmd, EngineSetupOptions& o);

struct EngineSetup {
  std::unique_ptr<Backend> backend;
  ModelConfig config;
  std::string source;  // the folder, the shape or "built-in default"
  std::string generation_config_dir;  // where generation_config.json is read (--generation-config); "": nowhere
  std::unique_ptr<Tokenizer> tokenizer;  // null for shapes
  ChatTemplateConfig chat;
  std::unique_ptr<LlamaModel> model;
  KvCache kv;
  std::unique_ptr<ModelRunner> runner;  // null under tensor parallelism, where tensor_parallel runs the steps
  std::unique_ptr<TensorParallelRunner> tensor_parallel;  // --tensor-parallel-size > 1: the ranks' models, caches, runners
  std::unique_ptr<KvBlockManager> blocks;
  // Structured outputs' grammar compiler for this model's vocabulary; null without a tokenizer.
  // Declared before the engine, which uses it.
  std::unique_ptr<GrammarCompiler> grammar;
  std::unique_ptr<Engine> engine;
  std::vector<int32_t> eos_token_ids;  // config.json's and generation_config.json's
  GenerationDefaults generation;       // generation_config.json's (--generation-config)
  std::string attention;               // the GPU attention chosen ("" on the CPU)
  int64_t max_model_len = 0;           // effective: --max-model-len or the model's
  int64_t max_num_seqs = 0;            // effective: --max-num-seqs capped by the token budget
};

// The backend --device names: the CPU reference with --threads threads, or CUDA device 0; --dtype
// is checked against it (refused, or noted in the log: cli/dtype_option.h).
// What the model options (--load-format, --rope-inv-freq-bf16, --quantization) ask of the loader.
LoadOptions load_options(const EngineSetupOptions& o);

// The KV cache's dtype for --kv-cache-dtype `name` on `backend`: auto is the activation dtype;
// fp8 (F8_E4M3, one byte per element) runs on every backend, bf16 on the GPU only.
DType kv_cache_dtype(const std::string& name, const Backend& backend);

std::unique_ptr<Backend> make_backend(const EngineSetupOptions& o, const GpuBackendFactory& gpu);

// The ids that end a generation: config.json's (a GGUF file's eos, eot and eom ids) and then
// generation_config.json's, each once.
std::vector<int32_t> eos_token_ids(const ModelConfig& config, const GenerationDefaults& generation);

// Builds it all; `log` receives the start-up report (KV pool, graphs).
std::unique_ptr<EngineSetup> build_engine(const EngineSetupOptions& o, const GpuBackendFactory& gpu,
                                          const std::function<void(const std::string&)>& log);

// What the server's request readers (server/openai_request.h) need of the model `s` built, for
// commands that read requests as the server does: its tokenizer, `chat_template` (null: none),
// limits, grammar compiler and generation_config.json's sampling defaults, under `name`.
server::ModelContext model_context(const EngineSetup& s, const ChatTemplate* chat_template, const std::string& name);

}  // namespace fg::cli
