// cli/perplexity_command.h — `fullgraph perplexity`: the perplexity of a model over a text (or a
// list of token ids), computed as llama.cpp's llama-perplexity computes it (cli/perplexity.h),
// with every chunk run through the engine as a concurrent request (continuous batching, chunked
// prefill) whose prompt logprobs supply the scores.
#pragma once

#include <CLI/CLI.hpp>

#include "backend/backend_factory.h"

namespace fg::cli {

// Adds the subcommand to `app`; `gpu` serves --device cuda (empty in a build without CUDA).
void add_perplexity_command(CLI::App& app, GpuBackendFactory gpu = {});

}  // namespace fg::cli
