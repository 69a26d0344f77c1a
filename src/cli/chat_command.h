// cli/chat_command.h — `fullgraph chat`: an interactive conversation in the terminal with a model
// built from the same options as `generate` and `serve`.
#pragma once

#include <CLI/CLI.hpp>

#include "backend/backend_factory.h"

namespace fg::cli {

// Adds the subcommand to `app`; it runs from the callback when selected. `gpu` serves
// --device cuda (empty in a build without CUDA: see backend_factory.h).
void add_chat_command(CLI::App& app, GpuBackendFactory gpu = {});

}  // namespace fg::cli
