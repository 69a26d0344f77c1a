// bench/serve/completion_chunk.h — what one SSE payload of a streamed /v1/completions response
// says: a content chunk, the usage chunk, the "[DONE]" sentinel, or an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fg::bench {

struct CompletionChunk {
  bool done = false;         // the "[DONE]" sentinel
  bool content = false;      // carries a generated token (timed for TTFT and ITL)
  bool bare_finish = false;  // a choice with empty text and a finish_reason (see below)
  std::string text;          // choices[0].text
  std::optional<int64_t> prompt_tokens, completion_tokens;  // from "usage", when present
  std::string error;         // non-empty: the server reported an error, or the payload is not JSON
};

// Classifies one payload. A chunk is content when it has a choice, like vLLM's client counts it
// (its text may be empty: a token that ends mid UTF-8 character still took a decode step), except
// a bare finish: some servers send one after the last token as a pure terminator, which would add
// a spurious inter-token gap. But servers that drop empty-text deltas (fullgraph's does) may send
// nothing else when no generated token decoded to text; StreamRecorder then times the bare finish
// as the first token, as vLLM would, rather than fail the request.
CompletionChunk parse_completion_chunk(std::string_view payload);

}  // namespace fg::bench
