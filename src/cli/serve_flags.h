// cli/serve_flags.h — the flags of `vllm serve` that `fullgraph serve` takes beyond the engine's
// options (engine_setup.h) and the HTTP server's: the model as a positional argument, the logprob
// limits and spelling, and the periodic stats line. Kept apart from serve_command.cpp so that
// the command's own file only groups them in one member and one call. Tool calling and reasoning:
// --enable-auto-tool-choice, --tool-call-parser and --reasoning-parser, with vLLM's names and
// rules (the parsers are server/tool_call_parser.h and server/reasoning_parser.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "cli/engine_setup.h"
#include "sampling/sampling_params.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace fg::cli {

struct ServeFlags {
  std::string model_tag;  // `serve MODEL`: vLLM's positional form of --model
  // The most logprobs a request may ask for, in logprobs, top_logprobs and prompt_logprobs
  // (vLLM's --max-logprobs; -1 there means no cap, here the engine's most, kMaxLogprobs).
  int64_t max_logprobs = kMaxLogprobs;
  bool disable_log_stats = false;         // no periodic engine stats line (stats_logger.h)
  double log_stats_interval_s = 10.0;     // hidden; $FULLGRAPH_LOG_STATS_INTERVAL, as vLLM's VLLM_LOG_STATS_INTERVAL
  bool return_tokens_as_token_ids = false;  // logprob tokens spelled "token_id:N"
  // tool_choice "auto" is served only with this, and needs a tool-call parser (vLLM's rule).
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser_name;  // --tool-call-parser as given ("" for none)
  std::string reasoning_parser_name;  // --reasoning-parser as given ("" for none)
  // The parsers those name, set by apply_serve_flags().
  std::optional<server::ToolCallFormat> tool_call_parser;
  std::optional<server::ReasoningParserKind> reasoning_parser;
};

void add_serve_flags(CLI::App& cmd, ServeFlags& f);

// Checks the flags and moves the positional model into `engine.model_dir` (both given: an
// error naming both); -1 for --max-logprobs becomes the engine's most. Parser names are looked
// up (an unknown one: an error listing the known ones); --enable-auto-tool-choice without
// --tool-call-parser is an error, as in vLLM.
void apply_serve_flags(ServeFlags& f, EngineSetupOptions& engine);

}  // namespace fg::cli
