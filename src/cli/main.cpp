// cli/main.cpp — the `fullgraph` executable: subcommand dispatch and the top-level error report.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/bench_command.h"
#include "cli/bench_latency_command.h"
#include "cli/bench_serve_command.h"
#include "cli/generate_command.h"
#include "cli/render_chat_command.h"
#include "cli/serve_command.h"
#include "cli/tokenize_command.h"
#include "core/error.h"

#ifdef FULLGRAPH_HAVE_CUDA
#include "attention/cuda/attention_bench.h"
#include "backend/backend_factory.h"
#include "core/cuda/device_info.h"
#include "backend/cuda/kernel_bench.h"
#endif

namespace {

void add_info_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("info", "Print the build configuration and the CUDA devices found");
  cmd->callback([] {
#ifdef FULLGRAPH_HAVE_CUDA
    fmt::print("CUDA backend: built for sm_90a\n");
    const auto devices = fg::cuda::list_devices();
    if (devices.empty()) fmt::print("CUDA devices: none found\n");
    for (const auto& d : devices)
      fmt::print("CUDA device {}: {} (sm_{}{}, {} SMs, {:.1f} GiB)\n", d.index, d.name, d.compute_major,
                 d.compute_minor, d.multiprocessors, static_cast<double>(d.total_memory_bytes) / (1u << 30));
#else
    fmt::print("CUDA backend: not built (no nvcc at configure time)\n");
#endif
  });
}

#ifdef FULLGRAPH_HAVE_CUDA
// `fullgraph bench attention` (attention/cuda/attention_bench.h).
void add_bench_attention_command(CLI::App& app) {
  CLI::App* cmd = fg::cli::bench_command(app)->add_subcommand(
      "attention", "Paged decode attention GB/s and prefill TFLOP/s of the GPU attention backends on GPU 0");
  auto json = std::make_shared<std::string>("bench_attention.json");
  cmd->add_option("--json", *json, "Write the numbers to this JSON file (empty: don't)")->capture_default_str();
  auto kinds = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"decode", "prefill"});
  cmd->add_option("--kinds", *kinds, "Cases to measure: decode, prefill (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"decode", "prefill"}))
      ->capture_default_str();
  auto backends = std::make_shared<std::vector<std::string>>(fg::AttentionBenchKinds{}.decode_backends);
  cmd->add_option("--decode-backends", *backends, "Attention backends of the decode cases, measured in this order")
      ->delimiter(',')
      ->check(CLI::IsMember({"split_kv", "flash", "auto"}))
      ->capture_default_str();
  cmd->callback([json, kinds, backends] {
    fg::AttentionBenchKinds chosen{false, false, *backends};
    for (const std::string& k : *kinds) (k == "decode" ? chosen.decode : chosen.prefill) = true;
    if (const int rc = fg::run_attention_benchmarks(*json, chosen); rc != 0) throw CLI::RuntimeError(rc);
  });
}

// `fullgraph bench kernels` (backend/cuda/kernel_bench.h).
void add_bench_kernels_command(CLI::App& app) {
  CLI::App* cmd = fg::cli::bench_command(app)->add_subcommand("kernels", "Copy bandwidth, decode matmuls and the eager decode step on GPU 0");
  auto json = std::make_shared<std::string>("bench_kernels.json");
  auto attention = std::make_shared<std::string>("flash");
  cmd->add_option("--json", *json, "Write the numbers to this JSON file (empty: don't)")->capture_default_str();
  cmd->add_option("--attention", *attention, "GPU attention for the decode steps: flash | split_kv | auto | reference")
      ->capture_default_str();
  auto tables = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--tables", *tables,
                  fmt::format("Run only these tables (default: all): {}", fmt::join(fg::cuda::kernel_benchmark_tables(), ", ")))
      ->delimiter(',');
  auto breakdown_batches = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{1});
  cmd->add_option("--breakdown-batches", *breakdown_batches,
                  "Decode-step batches (of 1, 8, 64) whose graph replay is broken down by kernel")
      ->delimiter(',')
      ->capture_default_str();
  cmd->callback([json, attention, tables, breakdown_batches] {
    if (const int rc = fg::cuda::run_kernel_benchmarks(*json, *attention, *tables, *breakdown_batches); rc != 0)
      throw CLI::RuntimeError(rc);
  });
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fullgraph — a Llama-family inference engine in C++/CUDA"};
  app.require_subcommand(1);
#ifdef FULLGRAPH_HAVE_CUDA
  const fg::GpuBackendFactory gpu = fg::cuda_backend_factory();
  add_bench_kernels_command(app);
  add_bench_attention_command(app);
#else
  const fg::GpuBackendFactory gpu;
#endif
  fg::cli::add_generate_command(app, gpu);
  fg::cli::add_serve_command(app, gpu);
  fg::cli::add_bench_latency_command(app, gpu);
  fg::cli::add_bench_serve_command(app);
  fg::cli::add_render_chat_command(app);
  fg::cli::add_tokenize_command(app);
  add_info_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "fullgraph: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
