// server/openai_response.h — the JSON the server answers with, in OpenAI's shapes: whole
// completions and chat completions, their streamed chunks, usage, and logprobs in each endpoint's
// format (completions: tokens / token_logprobs / top_logprobs / text_offset; chat: content[] of
// {token, logprob, bytes, top_logprobs}). Pure functions of their inputs: no engine, no HTTP.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/request_output.h"
#include "runner/step_io.h"
#include "tokenizer/tokenizer.h"

namespace fg::server {

using ojson = nlohmann::ordered_json;

struct ResponseHeader {
  std::string id;       // "cmpl-..." or "chatcmpl-...": one per response, shared by its chunks
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// One choice's output: the whole of it (non-streamed) or one delta of it (streamed).
struct ChoiceOutput {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<TokenLogprobs> logprobs;  // one per token when logprobs were asked for
  FinishReason finish_reason = FinishReason::kNone;
  std::optional<std::variant<int32_t, std::string>> stop_reason;
};

struct Usage {
  int64_t prompt_tokens = 0;      // the prompt's length, counted once whatever n is
  int64_t completion_tokens = 0;  // over all choices
};

// A fresh response id with the endpoint's prefix ("cmpl-" or "chatcmpl-") and 32 random hex digits.
std::string new_response_id(const char* prefix);

// Token strings for logprobs: the text a token adds after the one before it (special tokens
// kept), so that " world" keeps its space where a SentencePiece decoder would strip it from a
// lone token; "token_id:<id>" when the model has no tokenizer (vLLM's return_tokens_as_token_ids
// spelling). `previous` is the token before the first of `ids` (the prompt's last one), and is
// advanced past them, so consecutive stream chunks continue one another.
class LogprobFormatter {
 public:
  explicit LogprobFormatter(const Tokenizer* tokenizer) : tokenizer_(tokenizer) {}
  // decode([previous, id]) minus decode([previous]); decode([id]) where that is not a suffix
  // (a byte-fallback sequence being completed).
  std::string token_text(int32_t previous, int32_t id) const;

  // Completions format. text_offset counts characters (code points) from `offset`, which is
  // advanced past these tokens.
  ojson completion(std::span<const int32_t> ids, std::span<const TokenLogprobs> logprobs, int32_t& previous,
                   int64_t& offset) const;
  // Chat format: the entries of "content".
  ojson chat_content(std::span<const int32_t> ids, std::span<const TokenLogprobs> logprobs, int32_t& previous) const;

 private:
  const Tokenizer* tokenizer_;
};

// JSON has no infinities: -inf (a masked token) is reported as -9999.0, as vLLM does.
double json_logprob(float logprob);

ojson usage_json(const Usage& usage);
ojson stop_reason_json(const std::optional<std::variant<int32_t, std::string>>& stop_reason);
ojson finish_reason_json(FinishReason reason);

// Whole responses (stream false). `with_logprobs`: each choice's logprobs object, else null;
// `last_prompt_token` is the context of the first token's string.
ojson completion_response(const ResponseHeader& header, const std::vector<ChoiceOutput>& choices, bool with_logprobs,
                          const Usage& usage, const LogprobFormatter& format, int32_t last_prompt_token);
ojson chat_response(const ResponseHeader& header, const std::vector<ChoiceOutput>& choices, bool with_logprobs,
                    const Usage& usage, const LogprobFormatter& format, int32_t last_prompt_token);

// Streamed chunks. `usage_null`: the chunk carries "usage": null (stream_options.include_usage).
ojson completion_chunk(const ResponseHeader& header, int64_t index, const std::string& text, ojson logprobs,
                       FinishReason finish, const std::optional<std::variant<int32_t, std::string>>& stop_reason,
                       bool usage_null);
ojson chat_chunk(const ResponseHeader& header, int64_t index, ojson delta, ojson logprobs, FinishReason finish,
                 const std::optional<std::variant<int32_t, std::string>>& stop_reason, bool usage_null);
// The last chunk of stream_options.include_usage: no choices, the usage.
ojson usage_chunk(const ResponseHeader& header, const char* object, const Usage& usage);

}  // namespace fg::server
