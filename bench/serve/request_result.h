// bench/serve/request_result.h — what one benchmark request measured, as vLLM's
// RequestFuncOutput records it (times in seconds, from the moment the request was sent).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fg::bench {

struct RequestResult {
  bool success = false;
  std::string error;           // why it failed; empty on success
  int64_t prompt_len = 0;      // tokens sent
  int64_t output_tokens = 0;   // usage.completion_tokens (content chunks when the server sent no usage)
  bool usage_reported = false;
  double ttft = 0.0;           // send → first content chunk
  double latency = 0.0;        // send → last content chunk (vLLM's end-to-end latency)
  std::vector<double> itl;     // gaps between successive content chunks
};

}  // namespace fg::bench
