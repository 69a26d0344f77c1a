// bench/serve/serve_command.h — `fullgraph bench serve`: load-test an OpenAI-compatible server the
// way vLLM's `vllm bench serve` does (random token prompts, Poisson arrivals, a concurrency cap)
// and report TTFT, TPOT, ITL and end-to-end latency (bench_serve.h does the work).
#pragma once

#include <CLI/CLI.hpp>

namespace fg::bench {

// Adds `serve` under `bench` (the `bench` command).
void add_serve_command(CLI::App& bench);

}  // namespace fg::bench
