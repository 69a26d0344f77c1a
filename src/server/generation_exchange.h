// server/generation_exchange.h — one generation request's answer, driven without blocking an I/O
// thread: the job's listener wakes the exchange after each engine output; on the connection's
// strand a streamed answer takes the deltas that arrived and writes them as SSE (only once the
// socket has taken the previous write, so a slow reader holds deltas in the job, not bytes in the
// server), and a non-streamed one answers when every choice has finished. A client that leaves
// (the exchange is aborted) cancels what still runs, which frees its KV blocks within a step.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/generation_job.h"
#include "server/http_message.h"
#include "server/sse_stream.h"

namespace fg::server {

// Streams `job`'s deltas through `format` as Server-Sent Events.
void stream_generation(const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<GenerationJob> job,
                       StreamFormatter format);

// Answers with `body()`, the JSON of the finished job, once it has finished.
void answer_generation(const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<GenerationJob> job,
                       std::function<nlohmann::ordered_json()> body);

}  // namespace fg::server
