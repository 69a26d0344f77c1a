// bench/serve/stream_recorder.cpp — timing and counting of one completion stream.
#include "bench/serve/stream_recorder.h"

#include "bench/serve/completion_chunk.h"

namespace fg::bench {

StreamRecorder::StreamRecorder(double sent_at, int64_t prompt_len) : sent_at_(sent_at) {
  result_.prompt_len = prompt_len;
}

void StreamRecorder::on_bytes(std::string_view bytes, double now) {
  for (const std::string& payload : parser_.feed(bytes)) take(payload, now);
}

void StreamRecorder::fail(std::string error) {
  if (result_.error.empty()) result_.error = std::move(error);
}

void StreamRecorder::take(std::string_view payload, double now) {
  if (done_ || !result_.error.empty()) return;  // anything after [DONE] or an error is not measured
  const CompletionChunk chunk = parse_completion_chunk(payload);
  if (!chunk.error.empty()) {
    fail(chunk.error);
    return;
  }
  if (chunk.done) {
    done_ = true;
    return;
  }
  if (chunk.completion_tokens) {
    result_.output_tokens = *chunk.completion_tokens;
    result_.usage_reported = true;
  }
  // A bare finish counts only as the first (and then only) token: see completion_chunk.h.
  if (!chunk.content && !(chunk.bare_finish && !last_content_at_)) return;
  if (!last_content_at_) {
    result_.ttft = now - sent_at_;
  } else {
    result_.itl.push_back(now - *last_content_at_);
  }
  last_content_at_ = now;
  ++content_chunks_;
}

RequestResult StreamRecorder::finish(double now) {
  for (const std::string& payload : parser_.finish()) take(payload, now);
  if (result_.error.empty() && content_chunks_ == 0)
    result_.error = "the stream held no content chunk, so there is no time to first token";
  if (result_.error.empty() && !done_) result_.error = "the stream ended without data: [DONE]";
  result_.success = result_.error.empty();
  if (result_.success) {
    result_.latency = *last_content_at_ - sent_at_;
    if (!result_.usage_reported) result_.output_tokens = content_chunks_;
  } else {
    // vLLM's failed requests carry no timings; keeping partial ones would invite their use.
    result_.output_tokens = 0;
    result_.ttft = result_.latency = 0.0;
    result_.itl.clear();
  }
  return std::move(result_);
}

}  // namespace fg::bench
