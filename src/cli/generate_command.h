// cli/generate_command.h — `fullgraph generate`: greedy generation from token ids.
#pragma once

#include <CLI/CLI.hpp>

namespace fg::cli {

// Adds the subcommand to `app`; it runs from the callback when selected.
void add_generate_command(CLI::App& app);

// Parses "1,2,3" into token ids; errors name the offending item.
std::vector<int32_t> parse_token_ids(const std::string& text);

}  // namespace fg::cli
