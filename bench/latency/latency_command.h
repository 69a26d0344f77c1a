// bench/latency/latency_command.h — `fullgraph bench latency`: per-step time of decode and mixed
// batches through the ModelRunner, eager and full graph side by side.
#pragma once

#include <CLI/CLI.hpp>

#include "backend/backend_factory.h"

namespace fg::bench {

// Adds `latency` under `bench` (the `bench` command). `gpu` makes the backend of --device cuda.
void add_latency_command(CLI::App& bench, GpuBackendFactory gpu = {});

}  // namespace fg::bench
