// cli/global_options.h — the options of `fullgraph` itself, which every command takes before or
// after its name: --log-level (vLLM's --uvicorn-log-level, for the whole process) and --version.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace fg::cli {

// "fullgraph 0.1.0 (Release build, CUDA backend built for sm_90a)", or "..., no CUDA backend".
std::string version_text(bool cuda_built);

// Adds --version and --log-level to `app`; call after every command is added, since it lets
// each command (and each command under it) pass these on to `app`.
void add_global_options(CLI::App& app, bool cuda_built);

}  // namespace fg::cli
