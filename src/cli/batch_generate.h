// cli/batch_generate.h — `fullgraph generate --prompts FILE.jsonl`: a file of prompts run as one
// batch through the engine (continuous batching, prefix caching, the full-graph runner).
//
// Each line is a JSON object with one of "prompt" (text), "prompt_ids" (token ids) or "messages"
// (a chat, rendered through the model's template), plus any per-request fields that
// read_request_fields() knows (max_tokens, temperature, stop, ...). Each result is printed as one
// JSON line, in input order; a progress bar and the throughput go to stderr.
#pragma once

#include <string>

#include "backend/backend_factory.h"
#include "cli/engine_setup.h"

namespace fg::cli {

struct BatchGenerateOptions {
  EngineSetupOptions engine;
  std::string prompts_file;
  std::string output_file;     // empty: stdout
  int64_t default_max_tokens = 16;
};

void run_batch_generate(const BatchGenerateOptions& o, const GpuBackendFactory& gpu);

}  // namespace fg::cli
