// server/openai_request.h — an OpenAI request body (/v1/completions or /v1/chat/completions) to
// what the engine runs: the prompt's token ids, the sampling and stop parameters, n, streaming and
// logprob options. Validation is strict and total: anything the server would not honour exactly —
// a wrong type, a value out of range, a field it does not know, a feature it does not implement —
// is refused with an ApiError naming the field, before any work is queued.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "server/api_error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace fg::server {

enum class Endpoint { kCompletions, kChatCompletions };

// What validation needs to know about the model being served.
struct ModelContext {
  std::vector<std::string> served_names;        // non-empty; the first is reported in responses
  const Tokenizer* tokenizer = nullptr;         // null: token-id prompts only, no text
  const ChatTemplate* chat_template = nullptr;  // null: chat completions are refused
  int64_t vocab_size = 0;
  int64_t max_model_len = 0;  // prompt + max_tokens limit
  int64_t block_size = 16;    // the KV cache's geometry: a request must fit it whole
  int64_t usable_blocks = 0;
};

inline constexpr int64_t kMaxChoices = 16;   // n
inline constexpr size_t kMaxJsonDepth = 64;  // nesting of the request body
inline constexpr size_t kMaxMessages = 1024;

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;            // the served name to report
  std::vector<int32_t> prompt;  // token ids
  RequestSpec spec;             // sampling and stop parameters (prompt and on_output unset)
  int64_t n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int32_t top_logprobs = -1;   // -1: no logprobs; 0: the sampled token's; k: also the top k
};

// The body as a JSON object. Refuses (400, param "") text that is not JSON, JSON that is not an
// object, and nesting deeper than kMaxJsonDepth (checked before parsing: deep nesting would cost
// stack in every later copy of the value).
nlohmann::json parse_json_body(std::string_view body);

// Validates `body` for `endpoint` and builds the request. Throws ApiError: 404 (code
// "model_not_found") for a model that is not served, 400 naming the field for everything else.
ParsedRequest parse_openai_request(Endpoint endpoint, const nlohmann::json& body, const ModelContext& model);

// Chat messages (already validated) with each content flattened to a string, as the template
// expects them. Exposed for tests.
nlohmann::ordered_json normalize_chat_messages(const nlohmann::json& messages);

}  // namespace fg::server
