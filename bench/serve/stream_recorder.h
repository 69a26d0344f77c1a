// bench/serve/stream_recorder.h — turns the timed bytes of one streamed completion into a
// RequestResult: SSE framing, chunk classification, TTFT / ITL / latency and the token count.
//
// It knows nothing about sockets, so the timing rules are tested with made-up timestamps. Every
// event completed by one read gets that read's arrival time: that is when the client could have
// shown the token.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bench/serve/request_result.h"
#include "bench/serve/sse_parser.h"

namespace fg::bench {

class StreamRecorder {
 public:
  // `sent_at`: the send time, on the clock that `now` arguments use (seconds).
  StreamRecorder(double sent_at, int64_t prompt_len);

  // Response-body bytes that arrived at `now`.
  void on_bytes(std::string_view bytes, double now);

  // Marks the request failed (transport or HTTP errors); the first error is kept.
  void fail(std::string error);

  // Ends the stream and returns the measurements. Success needs at least one content chunk and
  // the "[DONE]" sentinel: a stream cut short by a crashing server must not count as completed.
  RequestResult finish(double now);

 private:
  void take(std::string_view payload, double now);

  SseParser parser_;
  RequestResult result_;
  double sent_at_;
  std::optional<double> last_content_at_;
  int64_t content_chunks_ = 0;
  bool done_ = false;
};

}  // namespace fg::bench
