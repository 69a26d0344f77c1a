// bench/bench_commands.h — every `fullgraph bench ...` subcommand, registered by one call from
// cli/main.cpp: latency and serve in every build; kernels, attention and sampling where the CUDA
// backend is built.
#pragma once

#include <CLI/CLI.hpp>

#include "backend/backend_factory.h"

namespace fg::bench {

// Adds `bench` to `app` with every benchmark under it. `gpu` makes the CUDA backend of `bench
// latency --device cuda` (empty in a build without CUDA).
void add_bench_commands(CLI::App& app, const GpuBackendFactory& gpu);

}  // namespace fg::bench
