// cli/tokenize_command.h — `fullgraph tokenize`: encode or decode through a tokenizer.json, one
// JSON value per line on stdin and stdout, so that tests and tools can drive the tokenizer.
#pragma once

#include <CLI/CLI.hpp>

namespace fg::cli {

// Adds the subcommand to `app`; it runs from the callback when selected.
void add_tokenize_command(CLI::App& app);

}  // namespace fg::cli
