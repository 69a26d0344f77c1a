// cli/default_model.cpp — see default_model.h.
#include "cli/default_model.h"

#include <fmt/format.h>

#include <cstdlib>
#include <system_error>

#include "core/log.h"

namespace fg::cli {

namespace fs = std::filesystem;

DefaultModel choose_default_model(const char* variable, const fs::path& executable) {
  const std::string value = variable ? variable : "";
  if (value == kBuiltinModelWord)
    return {"", fmt::format("no --model: using the built-in tiny model (random weights; FULLGRAPH_DEFAULT_MODEL={})",
                            kBuiltinModelWord)};
  // A path that does not exist is left for the model resolution to refuse: it names what it
  // looked for, and the line below says where the name came from.
  if (!value.empty())
    return {value, fmt::format("no --model: using the default model {} (FULLGRAPH_DEFAULT_MODEL)", value)};
  if (executable.empty())
    return {"", fmt::format("no --model: using the built-in tiny model (random weights; the executable's folder is "
                            "unknown, so models/{} was not looked for)",
                            kDefaultModelFile)};
  const fs::path file = (executable.parent_path() / ".." / "models" / kDefaultModelFile).lexically_normal();
  std::error_code ec;
  if (fs::is_regular_file(file, ec))
    return {file.string(), fmt::format("no --model: using the default model {}", file.string())};
  return {"", fmt::format("no --model: using the built-in tiny model (random weights; {} is not there: run "
                          "scripts/setup.sh for SmolLM2-135M-Instruct)",
                          file.string())};
}

fs::path running_executable() {
  std::error_code ec;
  fs::path path = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : path;
}

void apply_default_model(EngineSetupOptions& o) {
  if (!o.model_dir.empty() || !o.shape.empty()) return;
  const DefaultModel chosen = choose_default_model(std::getenv("FULLGRAPH_DEFAULT_MODEL"), running_executable());
  o.model_dir = chosen.model;
  log::info("{}", chosen.log_line);
}

}  // namespace fg::cli
