// cli/stats_logger.h — `serve`'s periodic engine line, as vLLM's LoggingStatLogger writes it:
// "Avg prompt throughput: ... tokens/s, Avg generation throughput: ... tokens/s, Running: N reqs,
// Waiting: N reqs, KV cache usage: x%, Prefix cache hit rate: y%", every interval while the
// engine is busy, and once more when it goes idle (so the last line shows the drop to zero). An
// idle server logs nothing. --disable-log-stats turns it off.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "engine/engine.h"

namespace fg::cli {

struct EngineSnapshot {
  EngineStats stats;
  EngineGauges gauges;
};

// The line for the interval of `seconds` from `before` to `now`. Throughputs are the interval's
// (prompt tokens count when their request is submitted); the prefix cache hit rate is since
// start, as a rate over a quiet interval would read 0%.
std::string engine_stats_line(const EngineSnapshot& before, const EngineSnapshot& now, double seconds);

// Whether the interval saw work: tokens in or out, or requests running or waiting at its end.
bool engine_busy(const EngineSnapshot& before, const EngineSnapshot& now);

// A thread that logs engine_stats_line every `interval` while busy; the destructor stops it.
class EngineStatsLogger {
 public:
  EngineStatsLogger(const Engine& engine, std::chrono::duration<double> interval);
  ~EngineStatsLogger();
  EngineStatsLogger(const EngineStatsLogger&) = delete;
  EngineStatsLogger& operator=(const EngineStatsLogger&) = delete;

 private:
  void run();

  const Engine& engine_;
  std::chrono::duration<double> interval_;
  std::mutex mutex_;  // stopping_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace fg::cli
