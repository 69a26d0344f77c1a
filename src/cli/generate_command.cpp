// cli/generate_command.cpp — `fullgraph generate`: loads a model (or the default: default_model.h),
// runs one prompt (text, a chat rendered through the template, or token ids) greedily through the
// CPU backend or (--device cuda) the CUDA backend, prints the generated text as it streams (or the
// ids) and optionally dumps logits. A text prompt ends at the model's EOS ids (unless
// --ignore-eos), as an engine request does; token ids run to --max-tokens, the fixed length that
// comparisons with reference ids and logits need. --prompts hands over to batch_generate.h.
#include "cli/generate_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <memory>

#include "backend/backend_factory.h"
#include "backend/cpu/cpu_backend.h"
#include "cli/batch_generate.h"
#include "cli/default_model.h"
#include "cli/model_source.h"
#include "cli/tensor_parallel_setup.h"
#include "core/log.h"
#include "model/generation_config.h"
#include "runner/greedy_generator.h"
#include "model/model_loader.h"
#include "model/safetensors.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace fg::cli {

namespace {

struct GenerateOptions {
  EngineSetupOptions engine;  // the model, the backend and the engine's limits
  std::string prompt_ids;
  int64_t max_tokens = 16;
  bool ignore_eos = false;
  std::string dump_logits;
  // Text input: a prompt, or a chat rendered through the template
  std::string prompt;
  bool chat = false;
  std::string system, user, messages_file;
  // Batch mode (--prompts)
  std::string prompts_file, output_file;
};

BatchGenerateOptions batch_options(const GenerateOptions& o) {
  BatchGenerateOptions b;
  b.engine = o.engine;
  b.prompts_file = o.prompts_file;
  b.output_file = o.output_file;
  b.default_max_tokens = o.max_tokens;
  return b;
}

// The prompt's token ids from whichever of --prompt-ids, --prompt or --chat was given.
std::vector<int32_t> prompt_ids(const GenerateOptions& o, const TextSide* text) {
  const int given = !o.prompt_ids.empty() + !o.prompt.empty() + o.chat;
  FG_CHECK(given == 1, "give exactly one of --prompt-ids, --prompt and --chat");
  if (!o.prompt_ids.empty()) return parse_token_ids(o.prompt_ids);
  if (!o.prompt.empty()) return text->tokenizer->encode(o.prompt, /*add_special_tokens=*/true);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!o.messages_file.empty()) {
    FG_CHECK(o.system.empty() && o.user.empty(), "--messages replaces --system and --user; give one or the other");
    std::ifstream in(o.messages_file);
    FG_CHECK(in.good(), "--messages: cannot read {}", o.messages_file);
    try {
      messages = nlohmann::ordered_json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      fail("--messages {}: not JSON ({})", o.messages_file, e.what());
    }
    FG_CHECK(messages.is_array() && !messages.empty(), "--messages {}: expected a non-empty JSON array of messages",
             o.messages_file);
  } else {
    FG_CHECK(!o.user.empty(), "--chat needs --user TEXT (and optionally --system TEXT), or --messages FILE.json");
    if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
    messages.push_back({{"role", "user"}, {"content", o.user}});
  }
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  const std::string rendered = render_chat(text->chat, messages, options);
  return text->tokenizer->encode(rendered, /*add_special_tokens=*/false);  // the template wrote them
}

// The prompt's ids checked against the vocabulary, and the ids that end a text generation: the
// model's eos ids (none for --prompt-ids output or with --ignore-eos; the sampling defaults do
// not apply to greedy decoding).
std::vector<int32_t> checked_stop_ids(const GenerateOptions& o, const ModelSource& files, const ModelConfig& config,
                                      const std::vector<int32_t>& prompt, bool text) {
  for (size_t i = 0; i < prompt.size(); ++i)
    FG_CHECK(prompt[i] < config.vocab_size, "--prompt-ids: id {} at position {} is outside the vocabulary of {}",
             prompt[i], i, config.vocab_size);
  return text && !o.ignore_eos
             ? eos_token_ids(config, read_generation_defaults(files.generation_config_dir, GenerationConfigMode::kVllm))
             : std::vector<int32_t>{};
}

// The runner of one prompt's steps of up to `step_tokens` tokens, with the engine flags' graph
// settings.
RunnerOptions one_prompt_runner_options(const GenerateOptions& o, int64_t step_tokens) {
  RunnerOptions ro;
  ro.max_num_tokens = step_tokens;
  ro.max_num_seqs = 1;
  ro.enforce_eager = o.engine.enforce_eager;
  ro.check_graph_inputs = o.engine.check_graph_inputs;
  if (!o.engine.cuda_graph_sizes.empty()) ro.capture_sizes = parse_capture_sizes(o.engine.cuda_graph_sizes, step_tokens);
  return ro;
}

// --tensor-parallel-size N > 1: the same greedy generation through the ranks' runners.
void run_generate_tensor_parallel(const GenerateOptions& o, const ModelSource& files, const std::vector<int32_t>& prompt,
                                  const TextSide* text) {
  FG_CHECK(o.dump_logits.empty(), "--dump-logits runs one eager prefill on one rank; drop --tensor-parallel-size");
  const TensorParallelModel model = tensor_parallel_model(o.engine, files);
  const ModelConfig& config = model.config;
  const std::vector<int32_t> stop_ids = checked_stop_ids(o, files, config, prompt, text != nullptr);
  FG_CHECK(o.engine.block_size >= 1 && o.engine.max_num_batched_tokens >= 1,
           "--block-size and --max-num-batched-tokens must be positive");
  const auto is_stop = [&](int32_t id) { return std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end(); };
  const int64_t T = static_cast<int64_t>(prompt.size());
  const int64_t step_tokens = std::min(T, o.engine.max_num_batched_tokens);
  const int64_t blocks = (T + o.max_tokens + o.engine.block_size - 1) / o.engine.block_size + 1;
  const RunnerOptions ro = one_prompt_runner_options(o, step_tokens);
  const DType kv_dtype = kv_cache_dtype(o.engine.kv_cache_dtype, CpuBackend(1));
  auto runner = build_tensor_parallel_runner(o.engine, model, blocks, kv_dtype, ro, log::info_line);

  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<IncrementalDetokenizer> stream;
  if (text) stream = std::make_unique<IncrementalDetokenizer>(*text->tokenizer, /*skip_special_tokens=*/false);
  const auto print_delta = [&](int32_t id) {
    if (is_stop(id)) return;
    fmt::print("{}", stream->push(id));
    std::fflush(stdout);
  };
  const std::vector<int32_t> generated =
      generate_greedy_with_runner(*runner, runner->kv(0), prompt, o.max_tokens, step_tokens,
                                  stream ? std::function<void(int32_t)>(print_delta) : nullptr, stop_ids);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (stream) {
    fmt::print("{}\n", stream->finish());
  } else {
    fmt::print("{}\n", fmt::join(generated, ","));
  }
  log::info("{} (cpu backend, tensor parallel over {} ranks of {} threads): {} prompt tokens, {} generated in {:.1f} ms "
            "({} graph replays, {} eager steps)", model.source, runner->size(), runner->backend(0).num_threads(), T,
            generated.size(), seconds * 1e3, runner->stats().graph_steps, runner->stats().eager_steps);
}

void run_generate(const GenerateOptions& o, const GpuBackendFactory& gpu) {
  if (!o.prompts_file.empty()) {
    FG_CHECK(o.prompt_ids.empty() && o.prompt.empty() && !o.chat && o.dump_logits.empty(),
             "--prompts takes the prompts from the file: drop --prompt-ids, --prompt, --chat and --dump-logits");
    FG_CHECK(o.max_tokens >= 1, "--max-tokens must be at least 1 with --prompts");
    run_batch_generate(batch_options(o), gpu);
    return;
  }
  FG_CHECK(o.engine.shape.empty(), "--shape needs --prompts (a named shape has no tokenizer and dummy weights)");
  // The model folder first: a missing model is named as such, not as a missing tokenizer.
  const ModelSource files = resolve_model_source(o.engine);
  const bool text_mode = o.prompt_ids.empty();
  std::unique_ptr<TextSide> text;
  if (text_mode)
    text = std::make_unique<TextSide>(load_text_side(o.engine, files, TextNeeds{.tokenizer = true, .chat_template = o.chat}));
  const std::vector<int32_t> prompt = prompt_ids(o, text.get());
  FG_CHECK(!prompt.empty(), "the prompt encodes to no tokens");
  if (o.engine.tensor_parallel_size > 1) {
    run_generate_tensor_parallel(o, files, prompt, text.get());
    return;
  }
  std::unique_ptr<Backend> backend_ptr = make_backend(o.engine, gpu);
  Backend& backend = *backend_ptr;
  LoadedModel loaded = load_model(files.model_dir, load_options(o.engine), backend);
  if (loaded.weights.converted_from)
    log::info("weights: {} in the checkpoint, converted to BF16 for the {} backend",
               dtype_name(*loaded.weights.converted_from), backend.name());
  const ModelConfig config = loaded.config;
  const std::vector<int32_t> stop_ids = checked_stop_ids(o, files, config, prompt, text_mode);
  FG_CHECK(o.engine.block_size >= 1, "--block-size must be positive");
  const auto is_stop = [&](int32_t id) { return std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end(); };

  const int64_t T = static_cast<int64_t>(prompt.size());
  const bool keep_logits = !o.dump_logits.empty();
  FG_CHECK(o.engine.max_num_batched_tokens >= 1, "--max-num-batched-tokens must be positive");
  // Without --dump-logits the steps go through the full-graph runner, whose steps hold at most
  // the token budget; --dump-logits needs every prompt position's logits: one eager prefill.
  const int64_t step_tokens = keep_logits ? T : std::min(T, o.engine.max_num_batched_tokens);
  const int64_t blocks = (T + o.max_tokens + o.engine.block_size - 1) / o.engine.block_size + 1;
  std::string attention_name;  // the GPU attention chosen
  if (backend.device() == Device::kCuda) {
    // One request: steps of at most the prompt, a context of at most prompt + new tokens.
    attention_name =
        gpu.set_attention(backend, o.engine.attention, attention_limits(config, step_tokens, 1, T + o.max_tokens, o.engine.block_size));
  }
  LlamaModel model(config, std::move(loaded.weights), backend, step_tokens, keep_logits ? T : 1);
  KvCache kv = allocate_kv_cache(backend, config, blocks, o.engine.block_size,
                                 kv_cache_dtype(o.engine.kv_cache_dtype, backend));
  model.use_kv_cache_scales(kv);

  GreedyResult result;
  std::string mode = "eager, all prompt logits";
  std::unique_ptr<ModelRunner> runner;
  if (!keep_logits) {
    runner = std::make_unique<ModelRunner>(model, kv, one_prompt_runner_options(o, step_tokens));
    runner->capture_graphs();
  }
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<IncrementalDetokenizer> stream;
  if (text) stream = std::make_unique<IncrementalDetokenizer>(*text->tokenizer, /*skip_special_tokens=*/false);
  const auto print_delta = [&](int32_t id) {
    if (is_stop(id)) return;  // an end, not text
    fmt::print("{}", stream->push(id));
    std::fflush(stdout);
  };
  if (runner) {
    result.generated = generate_greedy_with_runner(*runner, kv, prompt, o.max_tokens, step_tokens,
                                                   stream ? std::function<void(int32_t)>(print_delta) : nullptr,
                                                   stop_ids);
    mode = fmt::format("{} graph replays, {} eager steps", runner->stats().graph_steps, runner->stats().eager_steps);
  } else {
    result = generate_greedy(model, kv, prompt, o.max_tokens, keep_logits, stop_ids);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (stream) {
    if (!runner)
      for (int32_t id : result.generated) print_delta(id);
    fmt::print("{}\n", stream->finish());
  } else {
    fmt::print("{}\n", fmt::join(result.generated, ","));
  }
  const std::string where = backend.device() == Device::kHost
                                ? fmt::format("{} threads", static_cast<CpuBackend&>(backend).num_threads())
                                : fmt::format("{} attention", attention_name);
  const std::string ended =
      !result.generated.empty() && is_stop(result.generated.back())
          ? fmt::format(", ended by the EOS id {}", result.generated.back())
          : "";
  log::info("{} ({} backend, {}): {} prompt tokens, {} generated{} in {:.1f} ms ({})", loaded.source, backend.name(),
            where, T, result.generated.size(), ended, seconds * 1e3, mode);

  if (keep_logits) {
    const int64_t V = config.vocab_size, N = static_cast<int64_t>(result.generated.size());
    std::vector<NamedTensor> tensors = {
        {"prompt_logits", Tensor(result.prompt_logits.data(), DType::kF32, {T, V})},
        {"generated_ids", Tensor(result.generated.data(), DType::kI32, {N})},
        {"generated_logits", Tensor(result.generated_logits.data(), DType::kF32, {N, V})},
    };
    write_safetensors(o.dump_logits, tensors, {{"model", loaded.source}, {"producer", "fullgraph generate"}});
    log::info("logits written to {}", o.dump_logits);
  }
}

}  // namespace

std::vector<int32_t> parse_token_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FG_CHECK(used == item.size() && !item.empty() && value >= 0 && value <= INT32_MAX,
             "--prompt-ids: '{}' (item {}) is not a non-negative token id", item, ids.size());
    ids.push_back(static_cast<int32_t>(value));
    start = comma + 1;
  }
  FG_CHECK(!ids.empty(), "--prompt-ids is empty");
  return ids;
}

void add_generate_command(CLI::App& app, GpuBackendFactory gpu) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "Generate greedily from one prompt (text, a chat or token ids), or run a JSONL file of requests as one "
      "batch, each sampled as it asks (--prompts)");
  cmd->add_option("--prompt-ids", options->prompt_ids, "Prompt token ids, comma-separated (e.g. 1,2,3); prints ids");
  cmd->add_option("--prompt", options->prompt, "Prompt text (BOS and the like added); prints text as it streams");
  cmd->add_flag("--chat", options->chat, "Render --system/--user (or --messages) through the chat template");
  cmd->add_option("--system", options->system, "With --chat: the system message");
  cmd->add_option("--user", options->user, "With --chat: the user message");
  cmd->add_option("--messages", options->messages_file, "With --chat: a JSON file holding the messages array");
  cmd->add_option("--max-tokens", options->max_tokens,
                  "Most tokens to generate (a text prompt ends sooner at an EOS id; token ids run to this many)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_flag("--ignore-eos", options->ignore_eos,
                "With --prompt or --chat: generate past the model's EOS ids, up to --max-tokens");
  cmd->add_option("--dump-logits", options->dump_logits,
                  "Write prompt_logits F32 [T, vocab], generated_ids I32 [N] and generated_logits F32 [N, vocab] "
                  "to this safetensors file");
  cmd->add_option("--prompts", options->prompts_file,
                  "A JSONL file of requests ({\"prompt\"|\"prompt_ids\"|\"messages\": ..., plus sampling fields such "
                  "as max_tokens, temperature, top_p, top_k, min_p, seed, stop, logprobs}) run as one batch; one JSON "
                  "result per line");
  cmd->add_option("--output", options->output_file, "With --prompts: write the results here instead of stdout");
  // The engine's options, as `serve` has them; without --prompts, those of the KV pool, the
  // scheduler and --shape do not apply (one request runs alone in a pool sized for it).
  add_engine_options(*cmd, options->engine);
  cmd->callback([options, gpu] {
    apply_default_model(options->engine);
    run_generate(*options, gpu);
  });
}

}  // namespace fg::cli
