// server/generation_job.h — one HTTP generation request on the engine side: its n engine
// requests (one per choice), the deltas they stream, and their end. The engine's callbacks run on
// the stepping thread and only append under the job's lock; the HTTP side takes what arrived,
// told by the listener (called after each output, outside the lock) rather than by waiting.
//
// Lifetime: the engine's callbacks hold the job, so it outlives the HTTP side whenever a request is
// still running; the HTTP side cancels what is unfinished when it gives up (client gone, server
// draining past its deadline), which frees the blocks at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "server/engine_service.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/server_metrics.h"

namespace fg::server {

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  using Clock = std::chrono::steady_clock;

  // `keep_deltas`: queue every delta for take_deltas() (streaming); otherwise only the joined
  // outputs are kept. service and metrics must outlive every job.
  GenerationJob(EngineService& service, ServerMetrics& metrics, int64_t n, bool keep_deltas);

  // Submits one engine request per choice; choice i of a seeded request uses seed + i (vLLM's
  // rule for n > 1), so choices differ and each is reproducible. The caller has admitted n
  // requests (EngineService::try_admit); the job releases each one as it finishes. Throws ApiError
  // (400 for what the engine refuses, 503 when it has stopped) after cancelling what it submitted.
  void submit(const ParsedRequest& request);

  // Called after each engine output has reached the job, outside its lock, on the thread that
  // delivered it (the engine's, or one that cancels): it must only schedule work, never wait.
  // Set it before submit().
  void set_listener(std::function<void()> listener);

  struct Delta {
    int64_t index;
    RequestOutput output;
  };
  // Streaming: the deltas that arrived, oldest first, waiting up to `timeout` for at least one.
  std::vector<Delta> take_deltas(std::chrono::milliseconds timeout);
  // Whether every choice has finished, waiting up to `timeout` for it.
  bool wait_finished(std::chrono::milliseconds timeout);
  bool finished() const;
  // Cancels every choice that has not finished (each ends with "abort"). Must not be called from
  // an engine callback.
  void cancel_unfinished();

  std::vector<ChoiceOutput> outputs() const;  // joined, when not keeping deltas
  Usage usage() const;

 private:
  void on_output(int64_t index, const RequestOutput& output);  // engine callback

  struct Choice {
    uint64_t engine_id = 0;
    bool submitted = false;
    bool finished = false;
    int64_t generated = 0;
    bool has_token = false;
    Clock::time_point last_token;
    ChoiceOutput out;
  };

  EngineService& service_;
  ServerMetrics& metrics_;
  const bool keep_deltas_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Choice> choices_;  // [n]
  std::deque<Delta> deltas_;
  int64_t num_finished_ = 0;
  int64_t prompt_tokens_ = 0;
  Clock::time_point submitted_at_;
  std::function<void()> listener_;
};

}  // namespace fg::server
