// cli/bench_latency_command.h — `fullgraph bench latency`: per-step time of decode and mixed
// batches, eager and full graph side by side.
#pragma once

#include <CLI/CLI.hpp>

#include "backend/backend_factory.h"

namespace fg::cli {

// Adds `bench latency` under the `bench` subcommand of `app` (created if absent).
void add_bench_latency_command(CLI::App& app, GpuBackendFactory gpu = {});

}  // namespace fg::cli
