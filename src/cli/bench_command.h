// cli/bench_command.h — the `bench` command that every benchmark subcommand (`latency`, `serve`,
// `kernels`, `attention`) hangs under: made by the first one registered, found by the others.
#pragma once

#include <CLI/CLI.hpp>

namespace fg::cli {

inline CLI::App* bench_command(CLI::App& app) {
  auto found = app.get_subcommands([](CLI::App* c) { return c->get_name() == "bench"; });
  if (!found.empty()) return found.front();
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  return bench;
}

}  // namespace fg::cli
