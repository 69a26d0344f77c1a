// server/engine_service.h — the server's handle on the engine: a thread that steps it while it
// has work, submit/cancel from the HTTP threads, and admission control (a bound on the requests
// the server holds). /metrics reads the engine's gauges (Engine::gauges), which the engine takes
// under its own lock, so they describe one moment whatever step or cancel is under way.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/engine.h"

namespace fg::server {

class EngineService {
 public:
  // Starts the stepping thread. `engine` must outlive this object.
  explicit EngineService(Engine& engine);
  ~EngineService();  // stop()

  // Admission: reserves room for `n` requests when fewer than `limit` - n are held; release()
  // gives it back when each one finishes. The server answers 503 when this fails.
  bool try_admit(int64_t n, int64_t limit);
  void release(int64_t n);
  int64_t held() const;

  // Engine::submit, then wakes the thread. Throws fg::Error: the engine's validation, or after a
  // fatal error or stop().
  uint64_t submit(RequestSpec spec);
  // Engine::cancel: the request's stream ends with "abort" and its blocks are free on return.
  bool cancel(uint64_t id);
  void cancel_all();

  // Ends the thread after the current step; unfinished requests stay as they are.
  void stop();
  std::optional<std::string> fatal_error() const;
  const Engine& engine() const { return engine_; }

 private:
  void run();

  Engine& engine_;
  mutable std::mutex mutex_;  // stopping_, work_, fatal_, held_
  std::condition_variable wake_;
  bool stopping_ = false;
  bool work_ = false;
  std::optional<std::string> fatal_;
  int64_t held_ = 0;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace fg::server
