// cli/serve_flags.cpp — see serve_flags.h.
#include "cli/serve_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace fg::cli {

void add_serve_flags(CLI::App& cmd, ServeFlags& f) {
  cmd.add_option("model", f.model_tag,
                 "The model, as `vllm serve MODEL` takes it: a checkpoint folder, or ORG/NAME in the local Hugging "
                 "Face cache (same as --model; give one of the two)");
  cmd.add_option("--max-logprobs", f.max_logprobs,
                 fmt::format("The most logprobs a request may ask for (logprobs, top_logprobs, prompt_logprobs); -1: "
                             "the engine's most, {}",
                             kMaxLogprobs))
      ->capture_default_str();
  cmd.add_flag("--return-tokens-as-token-ids", f.return_tokens_as_token_ids,
               "In logprobs, spell each token as 'token_id:N', so tokens that are not valid UTF-8 on their own "
               "can be told apart");
  cmd.add_flag("--disable-log-stats", f.disable_log_stats,
               "Do not log the engine's throughput, queue and KV-cache line every 10 s while it is busy");
  cmd.add_option("--log-stats-interval", f.log_stats_interval_s, "Seconds between stats lines")
      ->envname("FULLGRAPH_LOG_STATS_INTERVAL")
      ->check(CLI::Range(0.05, 86400.0))
      ->group("");  // vLLM keeps this in an environment variable; the option exists for tests
  cmd.add_flag("--enable-auto-tool-choice", f.enable_auto_tool_choice,
               "Serve tool_choice \"auto\": the model decides whether to call a tool, and --tool-call-parser "
               "reads its calls from the text (required with this flag)");
  cmd.add_option("--tool-call-parser", f.tool_call_parser_name,
                 fmt::format("How the model writes tool calls: {} (vLLM's names)",
                             fmt::join(server::tool_call_parser_names(), ", ")));
  cmd.add_option("--reasoning-parser", f.reasoning_parser_name,
                 fmt::format("Split <think>...</think> into reasoning_content and content: {} (vLLM's names)",
                             fmt::join(server::reasoning_parser_names(), ", ")));
}

void apply_serve_flags(ServeFlags& f, EngineSetupOptions& engine) {
  if (!f.model_tag.empty()) {
    FG_CHECK(engine.model_dir.empty(),
             "the model is given twice: as the argument '{}' and as --model '{}'; give one (vLLM's form is `serve "
             "MODEL`)",
             f.model_tag, engine.model_dir);
    engine.model_dir = f.model_tag;
  }
  if (f.max_logprobs == -1) f.max_logprobs = kMaxLogprobs;
  FG_CHECK(f.max_logprobs >= 0 && f.max_logprobs <= kMaxLogprobs,
           "--max-logprobs {}: the engine returns at most {} logprobs per token; give 0 to {} (-1 means {})",
           f.max_logprobs, kMaxLogprobs, kMaxLogprobs, kMaxLogprobs);
  f.tool_call_parser.reset();
  if (!f.tool_call_parser_name.empty()) {
    f.tool_call_parser = server::tool_call_parser_from_name(f.tool_call_parser_name);
    FG_CHECK(f.tool_call_parser.has_value(), "--tool-call-parser '{}': not a parser fullgraph has; give one of: {}",
             f.tool_call_parser_name, fmt::join(server::tool_call_parser_names(), ", "));
  }
  FG_CHECK(!f.enable_auto_tool_choice || f.tool_call_parser.has_value(),
           "--enable-auto-tool-choice needs --tool-call-parser (one of: {}) to read the model's tool calls",
           fmt::join(server::tool_call_parser_names(), ", "));
  f.reasoning_parser.reset();
  if (!f.reasoning_parser_name.empty()) {
    f.reasoning_parser = server::reasoning_parser_from_name(f.reasoning_parser_name);
    FG_CHECK(f.reasoning_parser.has_value(), "--reasoning-parser '{}': not a parser fullgraph has; give one of: {}",
             f.reasoning_parser_name, fmt::join(server::reasoning_parser_names(), ", "));
  }
}

}  // namespace fg::cli
