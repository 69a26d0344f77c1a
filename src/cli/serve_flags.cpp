// cli/serve_flags.cpp — see serve_flags.h.
#include "cli/serve_flags.h"

#include <fmt/format.h>

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
}

}  // namespace fg::cli
