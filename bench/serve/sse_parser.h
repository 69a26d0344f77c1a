// bench/serve/sse_parser.h — Server-Sent Events framing: bytes as they come off the socket in,
// the `data` payload of each complete event out.
//
// A read can end anywhere — mid-line, mid-"data: ", between the two newlines of an event's end —
// so the parser keeps the unfinished tail and only hands out events whose blank line has arrived.
// Lines end in "\n" or "\r\n" (a lone "\r" is legal SSE but no OpenAI-compatible server sends it,
// and honouring it would need look-ahead across reads). Comment lines (":") and fields other than
// `data` are skipped; several `data` lines in one event are joined with "\n", as the spec says.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fg::bench {

class SseParser {
 public:
  // Consumes `bytes`; returns the payloads of the events they complete, in order.
  std::vector<std::string> feed(std::string_view bytes);

  // At the end of the stream: the payload of a last event that was not followed by a blank line
  // (servers that close right after "data: [DONE]\n" exist), or nothing.
  std::vector<std::string> finish();

 private:
  void take_line(std::string_view line, std::vector<std::string>& out);

  std::string partial_line_;  // bytes after the last "\n"
  std::string data_;          // the current event's data lines so far
  bool has_data_ = false;     // an event with an empty `data:` line is still an event
};

}  // namespace fg::bench
