// server/openai_response.h — the JSON the server answers with, in OpenAI's shapes: whole
// completions and chat completions, their streamed chunks and usage; each endpoint's logprobs
// come from server/logprob_format.h. Pure functions of their inputs: no engine, no HTTP.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/request_output.h"
#include "server/chat_output.h"
#include "server/logprob_format.h"

namespace fg::server {

struct ResponseHeader {
  std::string id;       // "cmpl-..." or "chatcmpl-...": one per response, shared by its chunks
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// One choice's output: the whole of it (non-streamed) or one delta of it (streamed).
struct ChoiceOutput {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<OutputLogprobs> logprobs;  // when logprobs were asked for: the engine's (they end where the text ends)
  std::vector<TokenLogprobs> prompt_logprobs;  // when prompt logprobs were asked for: each prompt token's after the first
  FinishReason finish_reason = FinishReason::kNone;
  std::optional<std::variant<int32_t, std::string>> stop_reason;
};

struct Usage {
  int64_t prompt_tokens = 0;      // the prompt's length, counted once whatever n is
  int64_t completion_tokens = 0;  // over all choices
};

// A fresh response id with the endpoint's prefix ("cmpl-" or "chatcmpl-") and 32 random hex digits.
std::string new_response_id(const char* prefix);

ojson usage_json(const Usage& usage);
ojson stop_reason_json(const std::optional<std::variant<int32_t, std::string>>& stop_reason);
ojson finish_reason_json(FinishReason reason);

// What a response reports of its prompt, beside the choices.
struct PromptReport {
  std::span<const int32_t> tokens;
  bool echo_logprobs = false;    // completions' echo with logprobs: the choices' logprobs start with the prompt's
  bool prompt_logprobs = false;  // vLLM's "prompt_logprobs" (asked, or implied by echo with logprobs)
};

// Whole responses (stream false). `with_logprobs`: each choice's logprobs object, else null.
// Completions report prompt logprobs in each choice, chat once, beside the choices (vLLM's shapes).
ojson completion_response(const ResponseHeader& header, const std::vector<ChoiceOutput>& choices, bool with_logprobs,
                          const Usage& usage, const LogprobFormatter& format, const PromptReport& prompt = {});
// `output`: how chat reads a choice's text (reasoning, tool calls; "tool_calls" finishes a choice
// whose calls parsed).
ojson chat_response(const ResponseHeader& header, const std::vector<ChoiceOutput>& choices, bool with_logprobs,
                    const Usage& usage, const LogprobFormatter& format, const PromptReport& prompt = {},
                    const ChatOutputOptions& output = {});
// Streamed chunks. `usage_null`: the chunk carries "usage": null (stream_options.include_usage).
ojson completion_chunk(const ResponseHeader& header, int64_t index, const std::string& text, ojson logprobs,
                       FinishReason finish, const std::optional<std::variant<int32_t, std::string>>& stop_reason,
                       bool usage_null);
ojson chat_chunk(const ResponseHeader& header, int64_t index, ojson delta, ojson logprobs, FinishReason finish,
                 const std::optional<std::variant<int32_t, std::string>>& stop_reason, bool usage_null);
// The last chunk of stream_options.include_usage: no choices, the usage.
ojson usage_chunk(const ResponseHeader& header, const char* object, const Usage& usage);

}  // namespace fg::server
