// server/openai_request.h — an OpenAI request body (/v1/completions or /v1/chat/completions) to
// what the engine runs: the prompt's token ids, the sampling, stop and scheduling parameters, n,
// streaming, logprob and echo options. Validation is strict and total: anything the server would
// not honour exactly — a wrong type, a value out of range, a field it does not know, a feature it
// does not implement — is refused with an ApiError naming the field, before any work is queued.
// The one exception is the short list of fields that change nothing we return (ignored_fields.h),
// accepted and logged once.
//
// What is specific to one endpoint lives beside this file: chat_request.h (messages, template
// options, tools), completion_request.h (prompt, echo, suffix); the sampling and stop fields are
// engine/request_json.h's, shared with `generate --prompts`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/chat_request.h"
#include "server/model_context.h"

namespace fg::server {

enum class Endpoint { kCompletions, kChatCompletions };

inline constexpr int64_t kMaxChoices = 16;   // n
inline constexpr size_t kMaxJsonDepth = 64;  // nesting of the request body
// What the JSON parser accepts; the HTTP layer's body limit is the one that binds (it is lower).
inline constexpr size_t kMaxJsonBodyBytes = size_t{64} << 20;
inline constexpr size_t kMaxRequestIdBytes = 256;

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;            // the served name to report
  std::vector<int32_t> prompt;  // token ids (after truncate_prompt_tokens)
  RequestSpec spec;             // sampling, stop and scheduling parameters (prompt and on_output unset)
  int64_t n = 1;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage: a usage chunk before [DONE]
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (needs include_usage): usage in
                                  // every chunk, each choice's own completion tokens so far (vLLM's)
  int32_t top_logprobs = -1;      // -1: no logprobs; 0: the sampled token's; k: also the top k
  // Completions' echo: `echo_text` (the prompt as sent, or its tokens decoded when it was given as
  // ids or truncated) goes before each choice's text: non-streamed through prepend_echo(), streamed
  // in each choice's first chunk (StreamFormatter). With logprobs, spec.prompt_logprobs is set too.
  bool echo = false;
  std::string echo_text;
  // Chat: how the answer's text is read (reasoning, tool calls; server/chat_output.h).
  ChatOutputOptions chat_output;
  // vLLM's request_id ("" when not given): the response id is "cmpl-" / "chatcmpl-" + it, unless
  // an X-Request-Id header names another (response_id()).
  std::string request_id;
};

// The body as a JSON object, through core/json's strict parser: refuses (400, param "") text that
// is not JSON (the message gives the byte offset, never the parser's internals or the whole
// input), bytes that are not UTF-8, duplicate keys, nesting deeper than kMaxJsonDepth (checked as
// each container opens), and JSON that is not an object.
nlohmann::json parse_json_body(std::string_view body);

// vLLM's truncate_prompt_tokens in `body`: keep the last N tokens of `prompt` (-1: max_model_len
// of them); `truncated` says whether any went. ApiError (400) for 0 or more than max_model_len.
void truncate_prompt(const nlohmann::json& body, const ModelContext& model, std::vector<int32_t>& prompt,
                     bool& truncated);

// The largest max_tokens a prompt of `prompt_len` tokens leaves room for, in the context and in
// the KV cache: chat's default max_tokens before generation_config.json's cap.
int64_t room_for(int64_t prompt_len, const ModelContext& model);

// Validates `body` for `endpoint` and builds the request. Throws ApiError: 404 (code
// "model_not_found") for a model that is not served, 400 naming the field for everything else.
// `compile`: also compile its output constraint (check_structured_output); the server does that
// apart, off its I/O threads.
ParsedRequest parse_openai_request(Endpoint endpoint, const nlohmann::json& body, const ModelContext& model,
                                   bool compile = true);

// The response id, as vLLM makes it: the endpoint's prefix ("cmpl-" or "chatcmpl-") and the
// request's id — the X-Request-Id header's value when there is one, else the body's request_id,
// else a random one. Throws ApiError (400) for a header value that is not a valid request id.
std::string response_id(const ParsedRequest& request, std::string_view x_request_id = {});

}  // namespace fg::server
