// server/model_context.h — what the request parsers need to know about the model being served:
// its names, tokenizer and chat template, the limits a request must fit, and the sampling
// defaults of its generation_config.json. Filled once when the model is ready.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/generation_config.h"
#include "sampling/sampling_params.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace fg {
class GrammarCompiler;  // grammar/grammar_compiler.h
}  // namespace fg

namespace fg::server {

struct ModelContext {
  std::vector<std::string> served_names;        // non-empty; the first is reported in responses
  const Tokenizer* tokenizer = nullptr;         // null: token-id prompts only, no text
  const ChatTemplate* chat_template = nullptr;  // null: chat completions are refused
  // Compiles output constraints for this model's vocabulary (grammar/grammar_compiler.h); null:
  // requests with response_format, structured_outputs or guided_* are refused.
  GrammarCompiler* grammar = nullptr;
  int64_t vocab_size = 0;
  int64_t max_model_len = 0;  // prompt + max_tokens limit
  int64_t block_size = 16;    // the KV cache's geometry: a request must fit it whole
  int64_t usable_blocks = 0;
  // The defaults of the sampling fields a request omits: generation_config.json's under
  // --generation-config auto, none under vllm (read_generation_defaults gives both). Their
  // max_tokens is the default of chat requests, capped by the room the prompt leaves.
  SamplingDefaults sampling_defaults;
  // The engine schedules by `priority` (--scheduling-policy priority). Without it a non-zero
  // priority is refused, as vLLM refuses it, rather than silently ignored.
  bool priority_scheduling = false;
  // The most top logprobs a request may ask for (--max-logprobs; at most kMaxLogprobs).
  int64_t max_logprobs = kMaxLogprobs;
  // Tools and reasoning (--enable-auto-tool-choice, --tool-call-parser, --reasoning-parser).
  bool enable_auto_tool_choice = false;
  std::optional<ToolCallFormat> tool_call_parser;
  std::optional<ReasoningParserKind> reasoning_parser;
};

}  // namespace fg::server
