// server/sse_stream.h — a streamed response as Server-Sent Events in OpenAI's framing: one
// `data: {json}\n\n` event per chunk, all chunks of a response sharing its id, chat streams
// opening each choice with the assistant role, an optional usage chunk (empty choices) at the
// end, and `data: [DONE]\n\n` last.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace fg::server {

std::string sse_event(const ojson& data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

class StreamFormatter {
 public:
  // `last_prompt_token`: the context of each choice's first token string (see LogprobFormatter).
  StreamFormatter(Endpoint endpoint, ResponseHeader header, int64_t n, int32_t top_logprobs, bool include_usage,
                  const Tokenizer* tokenizer, int32_t last_prompt_token);

  // What to send before any token: the role chunk of each chat choice; "" for completions.
  std::string begin();
  // The event for one engine delta of choice `index`; "" when it carries nothing the client would
  // see (no text, no logprobs, not the end).
  std::string delta(int64_t index, const RequestOutput& output);
  // The usage chunk when it was asked for, then [DONE].
  std::string end(const Usage& usage);

 private:
  Endpoint endpoint_;
  ResponseHeader header_;
  int32_t top_logprobs_;
  bool include_usage_;
  LogprobFormatter format_;
  std::vector<int64_t> text_offsets_;  // [n] completions' text_offset so far, per choice
  std::vector<int32_t> previous_;      // [n] the last token of each choice so far
};

}  // namespace fg::server
