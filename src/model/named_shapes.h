// model/named_shapes.h — config.json of well-known models by name, so benchmarks can run their
// exact shapes with dummy weights and nothing downloaded.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"

namespace fg {

// "llama-3.2-1b", "llama-3.1-8b", "qwen2.5-0.5b", "qwen3-0.6b". Throws naming the known ones.
ModelConfig named_model_config(const std::string& name);
std::vector<std::string> named_model_shapes();

}  // namespace fg
