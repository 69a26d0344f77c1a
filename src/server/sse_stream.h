// server/sse_stream.h — a streamed response as Server-Sent Events in OpenAI's framing: one
// `data: {json}\n\n` event per chunk, all chunks of a response sharing its id, chat streams
// opening each choice with the assistant role, an optional usage chunk (empty choices) at the
// end, and `data: [DONE]\n\n` last. With stream_options.continuous_usage_stats every chunk also
// carries the usage so far (vLLM's: the prompt, and the choice's own completion tokens); with
// completions' echo, each choice's first chunk starts with the prompt's text (and, with logprobs, its
// logprobs with the prompt's tokens').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace fg::server {

std::string sse_event(const ojson& data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

class StreamFormatter {
 public:
  StreamFormatter(Endpoint endpoint, ResponseHeader header, int64_t n, int32_t top_logprobs, bool include_usage,
                  LogprobFormatter format);
  // Everything from the parsed request: the above, and continuous usage and echo.
  StreamFormatter(ResponseHeader header, const ParsedRequest& request, LogprobFormatter format);

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
  bool continuous_usage_ = false;
  int64_t prompt_tokens_ = 0;  // for continuous usage
  std::string echo_text_;      // completions' echo, sent once per choice
  std::vector<bool> echoed_;   // [n]
  // Echo with logprobs: the prompt's tokens, and each choice's prompt logprobs (the engine's first
  // delta carries them; kept until the choice's first chunk goes out).
  bool echo_logprobs_ = false;
  std::vector<int32_t> prompt_;
  std::vector<std::vector<TokenLogprobs>> prompt_scored_;  // [n]
  // Chat with a reasoning or tool-call parser: each choice's text through its parser.
  std::vector<ChatDeltaStream> chat_streams_;  // [n], empty for plain text
  LogprobFormatter format_;
  std::vector<LogprobFormatter::Cursor> cursors_;  // [n] where each choice's logprobs stand
};

}  // namespace fg::server
