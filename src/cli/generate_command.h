// cli/generate_command.h — `fullgraph generate`: one prompt (text, a chat or token ids) decoded
// greedily, or a JSONL batch of requests with their own sampling parameters (batch_generate.h).
#pragma once

#include <CLI/CLI.hpp>

#include "backend/backend_factory.h"

namespace fg::cli {

// Adds the subcommand to `app`; it runs from the callback when selected. `gpu` serves
// --device cuda (empty in a build without CUDA: see backend_factory.h).
void add_generate_command(CLI::App& app, GpuBackendFactory gpu = {});

// Parses "1,2,3" into token ids; errors name the offending item.
std::vector<int32_t> parse_token_ids(const std::string& text);

}  // namespace fg::cli
