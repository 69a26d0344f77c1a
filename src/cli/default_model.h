// cli/default_model.h — the model `generate`, `serve` and `chat` run when given neither --model
// nor --shape: FULLGRAPH_DEFAULT_MODEL when it is set (a model path or ORG/NAME, or the word
// `builtin`), else the trained model scripts/setup.sh fetches into the repository's models/,
// looked up from the running executable (build/fullgraph -> build/../models/), else the built-in
// tiny model with random weights. The choice is logged in one line, so that an answer is never
// taken for the trained model's when it came from random weights.
#pragma once

#include <filesystem>
#include <string>

#include "cli/engine_setup.h"

namespace fg::cli {

// The file scripts/setup.sh puts into models/.
inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
// FULLGRAPH_DEFAULT_MODEL's value that forces the built-in tiny model.
inline constexpr const char* kBuiltinModelWord = "builtin";

struct DefaultModel {
  std::string model;     // what --model becomes; empty: the built-in tiny model
  std::string log_line;  // which one, and why
};

// The choice, from FULLGRAPH_DEFAULT_MODEL's value (null or empty: unset) and the running
// executable's path (empty: unknown, so models/ is not looked for).
DefaultModel choose_default_model(const char* variable, const std::filesystem::path& executable);

// The running executable's path (/proc/self/exe); empty where it cannot be read.
std::filesystem::path running_executable();

// When `o` names neither --model nor --shape: sets --model to the default model (empty for the
// built-in one) and logs the choice.
void apply_default_model(EngineSetupOptions& o);

}  // namespace fg::cli
