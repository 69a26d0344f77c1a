// cli/engine_setup.cpp — building the engine stack from options (see engine_setup.h).
#include "cli/engine_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "cli/dtype_option.h"
#include "cli/model_source.h"
#include "cli/tensor_parallel_setup.h"
#include "core/log.h"
#include "core/progress_bar.h"
#include "grammar/grammar_vocabulary.h"
#include "model/generation_config.h"
#include "model/model_loader.h"
#include "model/named_shapes.h"
#include "model/weights.h"

namespace fg::cli {

namespace {

// vLLM's names for where the model's files come from and how it computes.
void add_model_file_options(CLI::App& cmd, EngineSetupOptions& o) {
  cmd.add_option("--revision", o.revision,
                 "With --model ORG/NAME: the branch, tag or commit hash of the cached snapshot to load (default: main)");
  cmd.add_option("--tokenizer", o.tokenizer,
                 "A folder (or ORG/NAME in the Hugging Face cache) whose tokenizer.json and tokenizer_config.json "
                 "(chat template included) replace the model's");
  cmd.add_option("--chat-template", o.chat_template,
                 "A Jinja chat template replacing the tokenizer's: a file, or the template itself inline");
  cmd.add_option("--generation-config", o.generation_config,
                 "Where the request defaults and extra eos ids come from: auto (the model's generation_config.json), "
                 "vllm (none: the engine's defaults) or a folder holding generation_config.json")
      ->capture_default_str();
  cmd.add_option("--dtype", o.dtype,
                 std::string("Compute dtype: ") + dtype_choices() +
                     ". CUDA runs bfloat16 (auto converts float16/float32 checkpoints) and refuses the others; the CPU "
                     "reference runs float32 whatever is asked (auto keeps the checkpoint's weights as stored)")
      ->capture_default_str();
}

}  // namespace

void add_engine_options(CLI::App& cmd, EngineSetupOptions& o) {
  cmd.add_option("--model", o.model_dir,
                 "A Hugging Face checkpoint folder (config.json + *.safetensors), a GGUF file, or ORG/NAME of a model in the "
                 "local Hugging Face cache (nothing is downloaded). Omitted: $FULLGRAPH_DEFAULT_MODEL (a model, or "
                 "builtin), else models/SmolLM2-135M-Instruct.Q4_1.gguf beside the build folder (scripts/setup.sh "
                 "fetches it), else the built-in tiny model with random weights");
  add_model_file_options(cmd, o);
  cmd.add_option("--shape", o.shape,
                 "Instead of --model: a named shape with dummy weights (llama-3.2-1b, llama-3.1-8b, llama-3.1-70b, "
                 "qwen2.5-0.5b, qwen3-0.6b); prompts must then be token ids, unless --tokenizer gives a tokenizer");
  cmd.add_option("--load-format", o.load_format, "auto | safetensors | dummy (random weights)")->capture_default_str();
  cmd.add_option("--quantization,-q", o.quantization,
                 "fp8: quantize the q/k/v/o and gate/up/down projections of a float checkpoint (or --shape) to FP8 "
                 "e4m3 as they load, a scale per output channel, inputs rounded with a scale per token (vLLM's "
                 "--quantization fp8); embeddings, norms and the LM head stay as they are. FP8 checkpoints need no flag")
      ->check(CLI::IsMember({"fp8"}));
  cmd.add_option("--kv-cache-dtype", o.kv_cache_dtype,
                 "auto (the activation dtype) | bf16 | fp8 (e4m3, one byte per element: twice the tokens in the same "
                 "memory; per-layer scales from the checkpoint's kv_cache_scheme, else 1.0)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "bf16", "fp8"}));
  cmd.add_option("--device", o.device, "cpu | cuda")->capture_default_str();
  cmd.add_option("--attention", o.attention,
                 "GPU attention: auto (split_kv for small decode batches, flash for the rest) | flash | split_kv | "
                 "reference")
      ->capture_default_str();
  cmd.add_option("--threads", o.threads, "CPU threads (0 = all hardware threads)")->capture_default_str();
  cmd.add_option("--tensor-parallel-size", o.tensor_parallel_size,
                 "Split the model over this many ranks as Megatron-LM does (vLLM's flag). For now on --device cpu only, "
                 "the ranks as threads (--threads shared between them); safetensors checkpoints, --shape and the "
                 "built-in model, not GGUF or FP8")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd.add_option("--block-size", o.block_size, "Tokens per KV-cache block")->capture_default_str();
  cmd.add_flag("--rope-inv-freq-bf16", o.rope_bf16,
               "Round RoPE inverse frequencies to bf16, as a transformers model cast with .to(torch.bfloat16) does");
  cmd.add_flag("--enforce-eager", o.enforce_eager, "Run every step eagerly (no CUDA graphs)");
  cmd.add_flag("--check-graph-inputs", o.check_graph_inputs,
               "Validate every step's metadata against the attention backend's padding contract");
  cmd.add_option("--max-num-batched-tokens", o.max_num_batched_tokens, "Token budget of one step")
      ->capture_default_str();
  cmd.add_option("--max-num-seqs", o.max_num_seqs, "Most requests in one step")->capture_default_str();
  cmd.add_option("--max-model-len", o.max_model_len, "Context length limit (0 = the model's)")->capture_default_str();
  cmd.add_option("--cuda-graph-sizes", o.cuda_graph_sizes, "Token counts to capture graphs for, e.g. 1,2,4,8");
  cmd.add_option("--kv-cache-blocks", o.kv_cache_blocks,
                 "KV-cache blocks (0 = size the pool from --gpu-memory-utilization, or on the CPU from 2 GiB)")
      ->capture_default_str();
  cmd.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "Share of the GPU's memory this process may use; the KV cache takes what the model leaves")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 0.99));
  cmd.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", o.enable_prefix_caching,
               "Reuse the KV blocks of shared prompt prefixes (on by default)");
  cmd.add_flag("--batch-invariant", o.batch_invariant,
               "Make each request's tokens independent of what it is batched with (GPU: slower prefill)");
  cmd.add_option("--scheduling-policy", o.scheduling_policy,
                 "fcfs (first come, first served) | priority (a request's lower `priority` runs first and is "
                 "preempted last)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fcfs", "priority"}));
  cmd.add_option("--seed", o.seed, "Seed of the per-request seeds of requests that give none")->capture_default_str();
  cmd.add_flag("!--no-progress", o.progress, "No progress lines on stderr (graph capture, batches)");
}

namespace {

int64_t kv_bytes_per_block(const ModelConfig& c, int64_t block_size, DType dtype) {
  return c.num_layers * 2 * block_size * c.num_kv_heads * c.head_dim * static_cast<int64_t>(dtype_size(dtype));
}

}  // namespace

LoadOptions load_options(const EngineSetupOptions& o) {
  LoadOptions load;
  load.format = parse_load_format(o.load_format);
  load.round_rope_inv_freq_to_bf16 = o.rope_bf16;
  load.quantize_fp8 = o.quantization == "fp8";
  return load;
}

DType kv_cache_dtype(const std::string& name, const Backend& backend) {
  if (name == "fp8") return DType::kF8E4M3;
  if (name == "bf16") {
    FG_CHECK(backend.activation_dtype() == DType::kBF16, "--kv-cache-dtype bf16: the {} backend keeps its cache in "
             "{} (or fp8)", backend.name(), dtype_name(backend.activation_dtype()));
    return DType::kBF16;
  }
  FG_CHECK(name == "auto", "unknown --kv-cache-dtype '{}' (expected auto, bf16 or fp8)", name);
  return backend.activation_dtype();
}

std::unique_ptr<Backend> make_backend(const EngineSetupOptions& o, const GpuBackendFactory& gpu) {
  FG_CHECK(o.device == "cpu" || o.device == "cuda", "unknown --device '{}' (expected cpu or cuda)", o.device);
  // Before the backend exists: a dtype CUDA cannot run is refused without touching the GPU.
  const std::string note = check_dtype_option(o.dtype, o.device == "cuda" ? Device::kCuda : Device::kHost);
  if (!note.empty()) log::warning("{}", note);
  if (o.device == "cpu") return std::make_unique<CpuBackend>(o.threads);
  FG_CHECK(gpu.available(), "--device cuda: this build has no CUDA backend (nvcc was not found when it was configured)");
  return gpu.create(0);
}

std::vector<int32_t> eos_token_ids(const ModelConfig& config, const GenerationDefaults& generation) {
  std::vector<int32_t> ids;
  for (int64_t id : config.eos_token_ids) ids.push_back(static_cast<int32_t>(id));
  for (int32_t id : generation.eos_token_ids)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

server::ModelContext model_context(const EngineSetup& s, const ChatTemplate* chat_template, const std::string& name) {
  server::ModelContext m;
  m.served_names = {name};
  m.tokenizer = s.tokenizer.get();
  m.chat_template = chat_template;
  m.grammar = s.grammar.get();
  m.vocab_size = s.config.vocab_size;
  m.max_model_len = s.max_model_len;
  m.block_size = s.blocks->block_size();
  m.usable_blocks = s.blocks->num_usable_blocks();
  m.sampling_defaults = s.generation.sampling;
  return m;
}

std::unique_ptr<EngineSetup> build_engine(const EngineSetupOptions& o, const GpuBackendFactory& gpu,
                                          const std::function<void(const std::string&)>& log) {
  auto s = std::make_unique<EngineSetup>();
  FG_CHECK(o.block_size >= 1, "--block-size must be positive");
  FG_CHECK(o.max_num_batched_tokens >= 1 && o.max_num_seqs >= 1,
           "--max-num-batched-tokens and --max-num-seqs must be positive");
  const ModelSource files = resolve_model_source(o);  // before the backend: a missing model fails at once
  s->generation_config_dir = files.generation_config_dir;
  const bool tensor_parallel = o.tensor_parallel_size > 1;
  check_tensor_parallel_options(o);  // before the backend: CUDA refuses it without touching the GPU
  // Under tensor parallelism every rank has a backend of its own; this one (one thread) only answers
  // what the engine's sizing asks (device, dtypes).
  EngineSetupOptions host = o;
  if (tensor_parallel) host.threads = 1;
  s->backend = make_backend(host, gpu);
  Backend& backend = *s->backend;
  backend.set_batch_invariant(o.batch_invariant);

  ModelWeights weights;
  TensorParallelModel tp_model;
  if (tensor_parallel) {
    tp_model = tensor_parallel_model(o, files);
    s->config = tp_model.config;
    s->source = tp_model.source;
  } else if (!o.shape.empty()) {
    s->config = named_model_config(o.shape);
    s->source = o.shape + " (dummy weights)";
    if (o.quantization == "fp8") s->config.quantization = quantize_at_load_config();
    weights = dummy_weights(s->config, backend);
  } else {
    LoadedModel loaded = load_model(files.model_dir, load_options(o), backend);
    s->config = loaded.config;
    s->source = loaded.source;
    if (loaded.weights.converted_from)
      log(fmt::format("weights: {} in the checkpoint, converted to BF16 for the {} backend",
                      dtype_name(*loaded.weights.converted_from), backend.name()));
    weights = std::move(loaded.weights);
  }
  TextSide text = load_text_side(o, files, TextNeeds{});
  s->tokenizer = std::move(text.tokenizer);
  s->chat = std::move(text.chat);
  const ModelConfig& c = s->config;
  const int64_t max_model_len = o.max_model_len > 0 ? o.max_model_len : c.max_position_embeddings;
  FG_CHECK(max_model_len <= c.max_position_embeddings, "--max-model-len {} exceeds the model's context length {}",
           max_model_len, c.max_position_embeddings);
  s->generation = read_generation_defaults(files.generation_config_dir,
                                           parse_generation_config_mode(o.generation_config == "vllm" ? "vllm" : "auto"));
  if (!s->generation.sampling.empty())
    log(fmt::format("sampling defaults from {}/generation_config.json (--generation-config auto): {}",
                    files.generation_config_dir, s->generation.sampling.describe()));
  s->eos_token_ids = eos_token_ids(c, s->generation);

  const int64_t max_seqs = std::min(o.max_num_seqs, o.max_num_batched_tokens);
  s->max_model_len = max_model_len;
  s->max_num_seqs = max_seqs;
  if (backend.device() == Device::kCuda) {
    s->attention = gpu.set_attention(
        backend, o.attention, attention_limits(c, o.max_num_batched_tokens, max_seqs, max_model_len, o.block_size));
  }
  if (!tensor_parallel)
    s->model = std::make_unique<LlamaModel>(c, std::move(weights), backend, o.max_num_batched_tokens, max_seqs);

  // The KV pool: what is asked for, or what the memory budget leaves. Under tensor parallelism a
  // block spans every rank's share of the KV heads.
  const DType kv_dtype = kv_cache_dtype(o.kv_cache_dtype, backend);
  const int64_t per_block =
      tensor_parallel ? o.tensor_parallel_size * kv_bytes_per_block(shard_config(c, {0, o.tensor_parallel_size}),
                                                                    o.block_size, kv_dtype)
                      : kv_bytes_per_block(c, o.block_size, kv_dtype);
  int64_t num_blocks = o.kv_cache_blocks;
  std::string sized_by = "--kv-cache-blocks";
  if (num_blocks <= 0) {
    double budget = 0.0;
    if (backend.device() == Device::kCuda) {
      FG_CHECK(gpu.memory_info != nullptr, "this build cannot query GPU memory; give --kv-cache-blocks");
      size_t free_bytes = 0, total_bytes = 0;
      gpu.memory_info(backend, &free_bytes, &total_bytes);
      // Room kept for the graphs, cuBLASLt's workspace and the step arena, which come later.
      const double reserve = 1.5 * (1 << 30);
      const double used = static_cast<double>(total_bytes - free_bytes);
      budget = o.gpu_memory_utilization * static_cast<double>(total_bytes) - used - reserve;
      sized_by = fmt::format("--gpu-memory-utilization {:.2f} of {:.1f} GiB ({:.1f} GiB in use, 1.5 GiB kept back)",
                             o.gpu_memory_utilization, total_bytes / double(1 << 30), used / double(1 << 30));
    } else {
      budget = o.cpu_kv_cache_gib * (1 << 30);
      sized_by = fmt::format("the CPU budget of {:.1f} GiB", o.cpu_kv_cache_gib);
    }
    num_blocks = static_cast<int64_t>(budget / static_cast<double>(per_block));
    // More blocks than every request could use at once only waste memory.
    const int64_t useful = max_seqs * ((max_model_len + o.block_size - 1) / o.block_size) + 1;
    num_blocks = std::min(num_blocks, useful);
  }
  FG_CHECK(num_blocks >= 2, "the KV cache gets {} blocks of {} bytes ({}): too little memory for even one block",
           num_blocks, per_block, sized_by);
  if (!tensor_parallel) {
    s->kv = allocate_kv_cache(backend, c, num_blocks, o.block_size, kv_dtype);
    s->model->use_kv_cache_scales(s->kv);
  }
  log(fmt::format("KV cache: {} blocks of {} tokens ({} tokens, {:.2f} GiB, {}), sized by {}", num_blocks - 1,
                  o.block_size, (num_blocks - 1) * o.block_size, num_blocks * per_block / double(1 << 30),
                  dtype_name(kv_dtype), sized_by));

  RunnerOptions ro;
  ro.max_num_tokens = o.max_num_batched_tokens;
  ro.max_num_seqs = max_seqs;
  ro.max_model_len = max_model_len;
  ro.enforce_eager = o.enforce_eager;
  ro.check_graph_inputs = o.check_graph_inputs;
  if (!o.cuda_graph_sizes.empty()) ro.capture_sizes = parse_capture_sizes(o.cuda_graph_sizes, o.max_num_batched_tokens);
  // Each capture runs one forward of its size first: on the CPU the default sizes (up to the step
  // budget) cost minutes for a trained model, where a GPU takes seconds.
  if (o.device == "cpu" && o.cuda_graph_sizes.empty() && !o.enforce_eager)
    log("on the CPU every graph size costs one forward to capture; --cuda-graph-sizes 1,2,4,8 or --enforce-eager "
        "starts in seconds");
  if (tensor_parallel) {
    s->tensor_parallel = build_tensor_parallel_runner(o, tp_model, num_blocks, kv_dtype, ro, log);
  } else {
    s->runner = std::make_unique<ModelRunner>(*s->model, s->kv, ro, log);
    ProgressBar bar("capturing graphs", 0, o.progress);
    s->runner->capture_graphs([&bar](size_t done, size_t total) { bar.update(done, "", total); });
  }
  StepExecutor& executor = tensor_parallel ? static_cast<StepExecutor&>(*s->tensor_parallel) : *s->runner;
  s->blocks = std::make_unique<KvBlockManager>(KvBlockManagerOptions{num_blocks, o.block_size, o.enable_prefix_caching});

  if (s->tokenizer) {
    const auto start = std::chrono::steady_clock::now();
    s->grammar = std::make_unique<GrammarCompiler>(grammar_vocabulary(*s->tokenizer, c.vocab_size, s->eos_token_ids));
    log(fmt::format("structured outputs: the grammar vocabulary of {} tokens in {:.0f} ms", c.vocab_size,
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()));
  }

  EngineOptions eo;
  eo.grammar = s->grammar.get();
  eo.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  eo.scheduler.max_num_seqs = max_seqs;
  eo.scheduler.policy = parse_scheduling_policy(o.scheduling_policy);
  eo.max_model_len = max_model_len;
  eo.vocab_size = c.vocab_size;
  eo.eos_token_ids = s->eos_token_ids;
  eo.seed = o.seed;
  s->engine = std::make_unique<Engine>(executor, *s->blocks, s->tokenizer.get(), eo);
  return s;
}

}  // namespace fg::cli
