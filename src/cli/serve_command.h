// cli/serve_command.h — `fullgraph serve`: the OpenAI-compatible HTTP server (src/server/) over
// an engine built from the same options as `generate --prompts`.
#pragma once

#include <CLI/CLI.hpp>

#include "backend/backend_factory.h"

namespace fg::cli {

void add_serve_command(CLI::App& app, GpuBackendFactory gpu = {});

}  // namespace fg::cli
