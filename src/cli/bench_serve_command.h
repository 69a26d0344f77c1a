// cli/bench_serve_command.h — `fullgraph bench serve`: load-test an OpenAI-compatible server the
// way vLLM's `vllm bench serve` does (random token prompts, Poisson arrivals, a concurrency cap)
// and report TTFT, TPOT, ITL and end-to-end latency (bench_client/ does the work).
#pragma once

#include <CLI/CLI.hpp>

namespace fg::cli {

// Adds `bench serve` under the `bench` subcommand of `app` (created if absent).
void add_bench_serve_command(CLI::App& app);

}  // namespace fg::cli
