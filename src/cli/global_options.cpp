// cli/global_options.cpp — see global_options.h. FULLGRAPH_VERSION and FULLGRAPH_BUILD_TYPE come
// from CMake (CMakeLists.txt), on this file alone.
#include "cli/global_options.h"

#include <fmt/format.h>

#include "core/log.h"

#ifndef FULLGRAPH_VERSION
#define FULLGRAPH_VERSION "unknown"
#endif
#ifndef FULLGRAPH_BUILD_TYPE
#define FULLGRAPH_BUILD_TYPE "unknown"
#endif

namespace fg::cli {

namespace {

// Lets `cmd` and the commands under it hand the options they do not know to their parent.
void fall_through(CLI::App& cmd, const std::string& footer) {
  for (CLI::App* sub : cmd.get_subcommands([](CLI::App*) { return true; })) {
    sub->fallthrough();
    sub->footer(footer);
    fall_through(*sub, footer);
  }
}

}  // namespace

std::string version_text(bool cuda_built) {
  return fmt::format("fullgraph {} ({} build, {})", FULLGRAPH_VERSION, FULLGRAPH_BUILD_TYPE,
                     cuda_built ? "CUDA backend built for sm_90a" : "no CUDA backend: CPU only");
}

void add_global_options(CLI::App& app, bool cuda_built) {
  app.set_version_flag("--version", version_text(cuda_built), "Print the version, the build type and whether the "
                       "CUDA backend is built, and exit");
  // vLLM's choices for --uvicorn-log-level ("trace" reads as debug here); applied while the
  // command line is parsed, before any command runs.
  app.add_option_function<std::string>(
         "--log-level,--uvicorn-log-level", [](const std::string& level) { log::set_level(log::parse_level(level)); },
         "The level of the log on stderr: debug, info, warning, error or critical")
      ->check(CLI::IsMember({"trace", "debug", "info", "warning", "error", "critical"}))
      ->default_str("info");
  fall_through(app, "Every command also takes --log-level LEVEL (debug, info, warning, error, critical).");
}

}  // namespace fg::cli
