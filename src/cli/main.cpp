// cli/main.cpp — the `fullgraph` executable: subcommand dispatch and the top-level error report.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/generate_command.h"
#include "core/error.h"

#ifdef FULLGRAPH_HAVE_CUDA
#include "backend/cuda/device_info.h"
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
  CLI::App app{"fullgraph — a Llama-family inference engine in C++/CUDA"};
  app.require_subcommand(1);
  fg::cli::add_generate_command(app);
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
