// bench/latency/latency_command.cpp — step latency through the ModelRunner, eager vs graph.
//
// Every request first gets a real context (prefilled eagerly, so the KV cache holds real values),
// then each measured step re-runs the same tokens at the same positions: the step's work is that
// of a real decode (or mixed) step, and nothing grows between repetitions. A step's time is wall
// time around ModelRunner::execute: staging, the one copy, replay (or eager launches) and the
// read-back of the sampled ids — what the engine waits for.
#include "bench/latency/latency_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "bench/common/clock.h"
#include "bench/common/number_list.h"
#include "bench/common/stats.h"
#include "cli/engine_setup.h"
#include "bench/latency/constrained_requests.h"
#include "core/progress_bar.h"
#include "model/model_loader.h"
#include "model/model_path.h"
#include "model/named_shapes.h"
#include "runner/model_runner.h"
#include "runner/tensor_parallel_runner.h"

namespace fg::bench {

namespace {

struct BenchOptions {
  std::string model_dir, shape = "llama-3.2-1b", device = "cpu", attention = "auto", output_json;
  std::string json_schema, tokenizer;  // every decode request constrained by this schema
  std::string quantization;            // "" | fp8: the linears quantized at load (--quantization)
  std::string kv_cache_dtype = "auto";  // --kv-cache-dtype (engine_setup.h's kv_cache_dtype; dummy weights: scales 1.0)
  int grammar_threads = 1;             // the mask-filling pool (the engine's default)
  std::string batch_sizes = "1,8,64,256";
  int64_t context = 512, prefill_chunk = 256, steps = 20, warmup = 3, block_size = 16;
  int threads = 0;
  int tensor_parallel_size = 1;  // ranks as CPU threads (runner/tensor_parallel_runner.h)
  bool mixed = true;
};

// The batch sizes of --batch-sizes: positive integers.
std::vector<int64_t> parse_batch_sizes(const std::string& text) {
  std::vector<int64_t> out;
  for (double v : parse_number_list(text, "--batch-sizes", "a positive integer",
                                    [](double v) { return v >= 1.0 && v <= 1e9 && v == std::floor(v); }))
    out.push_back(static_cast<int64_t>(v));
  return out;
}

struct BenchRequest {
  std::vector<int32_t> tokens;
  int64_t computed = 0;
  std::vector<int32_t> blocks;
  ScheduledRequest chunk(int64_t n) const {
    ScheduledRequest s;
    s.token_ids = std::span<const int32_t>(tokens.data() + computed, static_cast<size_t>(n));
    s.num_computed = computed;
    s.block_ids = blocks;
    return s;
  }
};

struct Timing {
  double eager_ms = 0, graph_ms = 0;
  bool replayed = false;
  Bucket bucket;
};

// `constrained`: the step's requests fill their masks when the runner asks (while the forward runs
// on a GPU) and advance their grammars after it, inside the timed span.
// Runner: a ModelRunner, or a TensorParallelRunner (the same execute / execute_eager).
template <typename Runner>
Timing time_step(Runner& runner, std::vector<ScheduledRequest> step, const BenchOptions& o,
                 ConstrainedRequests* constrained = nullptr) {
  Timing t;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> samples;
    for (int64_t i = 0; i < o.warmup + o.steps; ++i) {
      const double start = monotonic_seconds();
      const std::function<void()> fill_masks = constrained ? constrained->before(step) : std::function<void()>{};
      StepResult r = pass == 0 ? runner.execute_eager(step, fill_masks) : runner.execute(step, fill_masks);
      if (constrained) constrained->after(r);
      const double s = monotonic_seconds() - start;
      if (i >= o.warmup) samples.push_back(s);
      if (pass == 1) {
        t.replayed = r.replayed;
        t.bucket = r.bucket;
      }
    }
    (pass == 0 ? t.eager_ms : t.graph_ms) = median(samples) * 1e3;
  }
  return t;
}

template <typename Runner>
void capture_with_progress(Runner& runner) {
  ProgressBar bar("capturing graphs", 0, true);
  runner.capture_graphs([&bar](size_t done, size_t total) { bar.update(done, "", total); });
}

template <typename Runner>
void measure(Runner& runner, const BenchOptions& o, const ModelConfig& config, const std::string& source,
             const std::string& backend_name, int64_t max_tokens, int64_t num_blocks);

void run_bench_latency(const BenchOptions& o, const GpuBackendFactory& gpu) {
  const std::vector<int64_t> batches = parse_batch_sizes(o.batch_sizes);
  const int64_t max_batch = *std::max_element(batches.begin(), batches.end());
  FG_CHECK(o.context >= 1 && o.prefill_chunk >= 1 && o.steps >= 1, "--context, --prefill-chunk and --steps must be positive");

  // Before any backend: CUDA refuses tensor parallelism without touching the GPU.
  FG_CHECK(o.tensor_parallel_size == 1 || o.device == "cpu", "--tensor-parallel-size {} with --device {}: the CUDA "
           "backend's NCCL communicator is not built yet (tensor parallelism runs on --device cpu for now)",
           o.tensor_parallel_size, o.device);
  std::unique_ptr<Backend> backend;
  if (o.device == "cpu") {
    // Under tensor parallelism each rank has a backend of its own; this one names the backend.
    backend = std::make_unique<CpuBackend>(o.tensor_parallel_size > 1 ? 1 : o.threads);
  } else {
    FG_CHECK(o.device == "cuda", "unknown --device '{}' (expected cpu or cuda)", o.device);
    FG_CHECK(gpu.available(), "--device cuda: this build has no CUDA backend");
    backend = gpu.create(0);
  }
  LoadOptions load;
  load.format = LoadFormat::kDummy;
  ModelConfig config;
  std::string source;
  if (!o.model_dir.empty()) {
    source = resolve_model_path(o.model_dir);  // a folder, or ORG/NAME in the Hugging Face cache
    config = load_model_path_config(source);  // config.json, or a GGUF file's metadata
  } else {
    config = named_model_config(o.shape);
    source = o.shape;
  }
  if (o.quantization == "fp8") {
    FG_CHECK(!config.quantization, "--quantization fp8: {} is quantized already", source);
    config.quantization = quantize_at_load_config();
  }
  const int64_t max_tokens = std::max(max_batch, o.prefill_chunk + (o.mixed ? max_batch : 0));
  const int64_t context_tokens = o.context + o.prefill_chunk;  // the mixed request's prompt is longest
  FG_CHECK(context_tokens <= config.max_position_embeddings, "--context + --prefill-chunk exceed the model's context");
  const int64_t blocks_per_req = (context_tokens + o.block_size - 1) / o.block_size;
  const int64_t num_blocks = 1 + blocks_per_req * (max_batch + 1);
  if (backend->device() == Device::kCuda) {
    gpu.set_attention(*backend, o.attention,
                      attention_limits(config, max_tokens, max_batch + 1, context_tokens, o.block_size));
  }
  const DType kv_dtype = cli::kv_cache_dtype(o.kv_cache_dtype, *backend);
  RunnerOptions ro;
  ro.max_num_tokens = max_tokens;
  ro.max_num_seqs = max_batch + 1;
  const std::string backend_name = backend->device() == Device::kCuda ? backend->name() + " / " + o.attention
                                                                      : backend->name();
  if (o.tensor_parallel_size > 1) {
    FG_CHECK(!config.quantization, "--tensor-parallel-size {}: FP8 models are not sharded yet", o.tensor_parallel_size);
    TensorParallelOptions tp;
    tp.size = o.tensor_parallel_size;
    tp.threads_per_rank = o.threads > 0 ? std::max(1, o.threads / tp.size) : 0;
    tp.num_kv_blocks = num_blocks;
    tp.block_size = o.block_size;
    tp.kv_dtype = kv_dtype;
    const auto load = [&config](Backend& b, const TensorParallelShard& shard) { return dummy_weights(config, b, 0, shard); };
    TensorParallelRunner runner(config, load, tp, ro);
    capture_with_progress(runner);
    measure(runner, o, config, source, fmt::format("{} x{} ranks", backend_name, tp.size), max_tokens, num_blocks);
    return;
  }
  ModelWeights weights = dummy_weights(config, *backend);
  LlamaModel model(config, weights, *backend, max_tokens, max_batch + 1);
  KvCache kv = allocate_kv_cache(*backend, config, num_blocks, o.block_size, kv_dtype);
  ModelRunner runner(model, kv, ro);
  capture_with_progress(runner);
  measure(runner, o, config, source, backend_name, max_tokens, num_blocks);
}

// The rows of the benchmark over a runner built for them.
template <typename Runner>
void measure(Runner& runner, const BenchOptions& o, const ModelConfig& config, const std::string& source,
             const std::string& backend_name, int64_t max_tokens, int64_t num_blocks) {
  const std::vector<int64_t> batches = parse_batch_sizes(o.batch_sizes);
  const int64_t max_batch = *std::max_element(batches.begin(), batches.end());
  const int64_t context_tokens = o.context + o.prefill_chunk;
  const int64_t blocks_per_req = (context_tokens + o.block_size - 1) / o.block_size;
  FG_ASSERT(1 + blocks_per_req * (max_batch + 1) <= num_blocks);

  // Requests with real contexts: request i holds `context` tokens; the last one also has a
  // prefill chunk waiting (for mixed steps).
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(config.vocab_size) - 1);
  std::vector<BenchRequest> reqs(static_cast<size_t>(max_batch + 1));
  int32_t next_block = 1;
  for (BenchRequest& r : reqs) {
    for (int64_t i = 0; i < context_tokens; ++i) r.tokens.push_back(token(rng));
    for (int64_t b = 0; b < blocks_per_req; ++b) r.blocks.push_back(next_block++);
  }
  fmt::print(stderr, "bench latency: prefilling {} requests of {} tokens\n", reqs.size(), o.context);
  for (BenchRequest& r : reqs) {
    while (r.computed < o.context - 1) {
      const int64_t n = std::min(o.context - 1 - r.computed, max_tokens);
      runner.execute_eager({r.chunk(n)});
      r.computed += n;
    }
  }

  nlohmann::json rows = nlohmann::json::array();
  fmt::print("{} ({} layers, hidden {}), {} backend, context {}, median of {} steps\n", source, config.num_layers,
             config.hidden_size, backend_name, o.context, o.steps);
  fmt::print("{:<8} {:>6} {:>7} {:>10} {:>10} {:>8}  {}\n", "kind", "batch", "tokens", "eager ms", "graph ms", "speedup",
             "graph bucket");
  auto report = [&](const char* kind, int64_t batch, int64_t tokens, const Timing& t) {
    fmt::print("{:<8} {:>6} {:>7} {:>10.3f} {:>10.3f} {:>7.2f}x  {}\n", kind, batch, tokens, t.eager_ms, t.graph_ms,
               t.eager_ms / t.graph_ms, t.replayed ? t.bucket.to_string() : "(eager: no bucket)");
    rows.push_back({{"kind", kind}, {"batch", batch}, {"tokens", tokens}, {"eager_ms", t.eager_ms},
                    {"graph_ms", t.graph_ms}, {"replayed", t.replayed}, {"bucket_tokens", t.bucket.num_tokens},
                    {"bucket_reqs", t.bucket.num_reqs}});
  };
  std::unique_ptr<ConstrainedRequests> constrained;
  if (!o.json_schema.empty()) {
    FG_CHECK(!o.tokenizer.empty(), "--json-schema needs --tokenizer (a folder with tokenizer.json)");
    std::vector<int32_t> eos;
    for (int64_t id : config.eos_token_ids) eos.push_back(static_cast<int32_t>(id));
    constrained = std::make_unique<ConstrainedRequests>(o.tokenizer, o.json_schema, config.vocab_size, eos, max_batch,
                                                        o.grammar_threads);
    fmt::print("structured outputs: grammar vocabulary {:.0f} ms; the schema ({} bytes) compiled in {:.1f} ms\n",
               constrained->vocabulary_ms(), constrained->schema_bytes(), constrained->compile_ms());
  }
  for (int64_t b : batches) {
    std::vector<ScheduledRequest> step;
    for (int64_t i = 0; i < b; ++i) step.push_back(reqs[i].chunk(1));
    report("decode", b, b, time_step(runner, step, o));
    if (constrained) {
      constrained->reset_host_times();
      report("json", b, b, time_step(runner, step, o, constrained.get()));
      const ConstrainedRequests::HostTimes& h = constrained->host_times();
      fmt::print("  json {}: host per step (mean over eager and graph steps): mask fill {:.3f} ms (while the "
                 "forward runs), sampled tokens checked and handed to the matchers {:.3f} ms (after the step)\n",
                 b, h.fill_ms / static_cast<double>(h.steps), h.accept_ms / static_cast<double>(h.steps));
    }
    if (o.mixed) {
      BenchRequest& p = reqs.back();
      step.push_back(p.chunk(o.prefill_chunk));
      report("mixed", b + 1, b + o.prefill_chunk, time_step(runner, step, o));
    }
  }
  if (!o.output_json.empty()) {
    nlohmann::json doc = {{"model", source}, {"backend", backend_name}, {"attention", o.attention},
                          {"context", o.context}, {"steps", o.steps}, {"tensor_parallel_size", o.tensor_parallel_size},
                          {"rows", rows}};
    std::ofstream(o.output_json) << doc.dump(2) << "\n";
  }
}

}  // namespace

void add_latency_command(CLI::App& bench, GpuBackendFactory gpu) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = bench.add_subcommand("latency", "Per-step time of decode and mixed batches, eager vs full graph");
  cmd->add_option("--model", o->model_dir, "A folder with config.json, a .gguf file, or ORG/NAME in the Hugging Face cache (weights are dummy)");
  cmd->add_option("--shape", o->shape, "A named shape: llama-3.2-1b, llama-3.1-8b, llama-3.1-70b, qwen2.5-0.5b, qwen3-0.6b")
      ->capture_default_str();
  cmd->add_option("--quantization,-q", o->quantization,
                 "fp8: the q/k/v/o and gate/up/down projections in FP8, quantized at load (as serve's --quantization)")
      ->check(CLI::IsMember({"fp8"}));
  cmd->add_option("--kv-cache-dtype", o->kv_cache_dtype,
                  "auto | bf16 | fp8: the KV cache's element type (fp8: e4m3 with scales 1.0, dummy weights)")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "cpu | cuda")->capture_default_str();
  cmd->add_option("--attention", o->attention, "GPU attention backend: auto | flash | split_kv")->capture_default_str();
  cmd->add_option("--batch-sizes", o->batch_sizes, "Decode batch sizes")->capture_default_str();
  cmd->add_option("--context", o->context, "Tokens of context per request")->capture_default_str();
  cmd->add_option("--prefill-chunk", o->prefill_chunk, "Prefill tokens beside the decodes of a mixed step")
      ->capture_default_str();
  cmd->add_flag("!--no-mixed", o->mixed, "Skip mixed prefill+decode steps");
  cmd->add_option("--steps", o->steps, "Timed steps per row")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed steps per row")->capture_default_str();
  cmd->add_option("--threads", o->threads, "CPU threads (0 = all)")->capture_default_str();
  cmd->add_option("--tensor-parallel-size", o->tensor_parallel_size,
                  "Split the model over this many ranks (CPU threads for now; dummy weights sliced per rank)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--output-json", o->output_json, "Also write the rows as JSON");
  cmd->add_option("--json-schema", o->json_schema,
                  "Also time decode steps whose every request is constrained by this JSON schema (rows \"json\")");
  cmd->add_option("--tokenizer", o->tokenizer, "The tokenizer of --json-schema's grammar: a folder with tokenizer.json");
  cmd->add_option("--grammar-threads", o->grammar_threads, "Threads filling the masks of a step (the engine's default: 1)")
      ->capture_default_str();
  cmd->callback([o, gpu] { run_bench_latency(*o, gpu); });
}

}  // namespace fg::bench
