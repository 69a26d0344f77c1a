// cli/main.cpp — the `fullgraph` executable: subcommand dispatch and the top-level error report.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "backend/backend_factory.h"
#include "bench/bench_commands.h"
#include "cli/chat_command.h"
#include "cli/generate_command.h"
#include "cli/global_options.h"
#include "cli/perplexity_command.h"
#include "cli/render_chat_command.h"
#include "cli/serve_command.h"
#include "cli/tokenize_command.h"
#include "core/error.h"
#include "core/log.h"  // the top-level error report, in every build

#ifdef FULLGRAPH_HAVE_CUDA
#include "core/cuda/device_info.h"
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fullgraph — a Llama-family inference engine in C++/CUDA; `fullgraph serve MODEL` serves a model "
               "as `vllm serve MODEL` does"};
  app.require_subcommand(1);
#ifdef FULLGRAPH_HAVE_CUDA
  const fg::GpuBackendFactory gpu = fg::cuda_backend_factory();
#else
  const fg::GpuBackendFactory gpu;
#endif
  fg::cli::add_generate_command(app, gpu);
  fg::cli::add_serve_command(app, gpu);
  fg::cli::add_chat_command(app, gpu);
  fg::cli::add_perplexity_command(app, gpu);
  fg::bench::add_bench_commands(app, gpu);  // bench/: every `fullgraph bench ...`
  fg::cli::add_render_chat_command(app);
  fg::cli::add_tokenize_command(app);
  add_info_command(app);
  fg::cli::add_global_options(app, gpu.available());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fg::log::error("{}", e.what());
    return 1;
  }
  return 0;
}
