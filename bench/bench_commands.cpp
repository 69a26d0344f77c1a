// bench/bench_commands.cpp — the `bench` command and its subcommands. The GPU benchmarks' flags are
// mapped here; latency and serve have flags enough for a file of their own.
#include "bench/bench_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/grammar/grammar_command.h"
#include "bench/latency/latency_command.h"
#include "bench/serve/serve_command.h"

#ifdef FULLGRAPH_HAVE_CUDA
#include "bench/attention/attention_bench.h"
#include "bench/kernels/kernel_bench.h"
#include "bench/sampling/sampling_bench.h"
#endif

namespace fg::bench {

namespace {

#ifdef FULLGRAPH_HAVE_CUDA
// `bench kernels` (bench/kernels/kernel_bench.h).
void add_kernels_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("kernels", "Copy bandwidth, decode matmuls and the eager decode step on GPU 0");
  auto json = std::make_shared<std::string>("bench_kernels.json");
  auto attention = std::make_shared<std::string>("flash");
  cmd->add_option("--json", *json, "Write the numbers to this JSON file (empty: don't)")->capture_default_str();
  cmd->add_option("--attention", *attention, "GPU attention for the decode steps: flash | split_kv | auto | reference")
      ->capture_default_str();
  auto tables = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--tables", *tables,
                  fmt::format("Run only these tables (default: all): {}", fmt::join(kernel_benchmark_tables(), ", ")))
      ->delimiter(',');
  auto breakdown_batches = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{1});
  cmd->add_option("--breakdown-batches", *breakdown_batches,
                  "Decode-step batches (of 1, 8, 64) whose graph replay is broken down by kernel")
      ->delimiter(',')
      ->capture_default_str();
  cmd->callback([json, attention, tables, breakdown_batches] {
    if (const int rc = run_kernel_benchmarks(*json, *attention, *tables, *breakdown_batches); rc != 0)
      throw CLI::RuntimeError(rc);
  });
}

// `bench attention` (bench/attention/attention_bench.h).
void add_attention_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand(
      "attention", "Paged decode attention GB/s and prefill TFLOP/s of the GPU attention backends on GPU 0");
  auto json = std::make_shared<std::string>("bench_attention.json");
  cmd->add_option("--json", *json, "Write the numbers to this JSON file (empty: don't)")->capture_default_str();
  auto kinds = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"decode", "prefill"});
  cmd->add_option("--kinds", *kinds, "Cases to measure: decode, prefill (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"decode", "prefill"}))
      ->capture_default_str();
  auto backends = std::make_shared<std::vector<std::string>>(AttentionBenchKinds{}.decode_backends);
  cmd->add_option("--decode-backends", *backends, "Attention backends of the decode cases, measured in this order")
      ->delimiter(',')
      ->check(CLI::IsMember({"split_kv", "flash", "auto"}))
      ->capture_default_str();
  cmd->callback([json, kinds, backends] {
    AttentionBenchKinds chosen{false, false, *backends};
    for (const std::string& k : *kinds) (k == "decode" ? chosen.decode : chosen.prefill) = true;
    if (const int rc = run_attention_benchmarks(*json, chosen); rc != 0) throw CLI::RuntimeError(rc);
  });
}

// `bench sampling` (bench/sampling/sampling_bench.h).
void add_sampling_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand(
      "sampling", "GPU sampler time at the Llama-3 vocabulary, greedy and sampled, 1 to 256 rows, on GPU 0");
  cmd->callback([] {
    if (const int rc = run_sampling_benchmark(); rc != 0) throw CLI::RuntimeError(rc);
  });
}
#endif

}  // namespace

void add_bench_commands(CLI::App& app, const GpuBackendFactory& gpu) {
  CLI::App* bench = app.add_subcommand(
      "bench", "Measure the engine: per-step latency, a server under load; kernels, attention and the sampler on a GPU");
  bench->require_subcommand(1);
#ifdef FULLGRAPH_HAVE_CUDA
  add_kernels_command(*bench);
  add_attention_command(*bench);
  add_sampling_command(*bench);
#endif
  add_latency_command(*bench, gpu);
  add_serve_command(*bench);
  add_grammar_command(*bench);
}

}  // namespace fg::bench
