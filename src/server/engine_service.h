// server/engine_service.h — the server's handle on the engine: a thread that steps it while it
// has work, submit/cancel from the HTTP threads, admission control (a bound on the requests the
// server holds), and a consistent view of the KV cache for /metrics.
//
// The block manager is not thread-safe and the Engine exposes it without its lock, so /metrics
// could not read free blocks while a step or a cancel changes them. Here every cancel and every
// KV read happens under one mutex, and the stepping
// thread marks when a step (which changes the blocks under the engine's own lock) is in flight;
// a reader then gets the snapshot taken right after the previous step. (An engine-side
// Engine::kv_stats() under the engine lock would make this unnecessary.)
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/engine.h"

namespace fg::server {

struct KvSnapshot {
  int64_t free_blocks = 0;    // free plus evictable cached blocks: what can be handed out now
  int64_t usable_blocks = 0;  // all blocks but the null block
  double usage = 0.0;         // 1 - free / usable
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
};

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
  KvSnapshot kv_snapshot() const;
  const Engine& engine() const { return engine_; }

 private:
  void run();
  KvSnapshot read_kv() const;  // callers hold kv_mutex_ and no step is in flight

  Engine& engine_;
  mutable std::mutex mutex_;  // stopping_, work_, fatal_, held_
  std::condition_variable wake_;
  bool stopping_ = false;
  bool work_ = false;
  std::optional<std::string> fatal_;
  int64_t held_ = 0;
  mutable std::mutex kv_mutex_;  // every cancel, every KV read, stepping_, last_
  bool stepping_ = false;
  mutable KvSnapshot last_;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace fg::server
