// cli/render_chat_command.h — `fullgraph render-chat`: a conversation rendered with a model's
// chat template, printed exactly as the prompt string the engine would tokenize.
#pragma once

#include <CLI/CLI.hpp>

namespace fg::cli {

// Adds the subcommand to `app`; it runs from the callback when selected.
void add_render_chat_command(CLI::App& app);

}  // namespace fg::cli
