// cli/stats_logger.cpp — see stats_logger.h.
#include "cli/stats_logger.h"

#include <fmt/format.h>

#include "core/log.h"

namespace fg::cli {

namespace {

EngineSnapshot snapshot(const Engine& engine) { return {engine.stats(), engine.gauges()}; }

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

}  // namespace

std::string engine_stats_line(const EngineSnapshot& before, const EngineSnapshot& now, double seconds) {
  const double prompt = static_cast<double>(now.stats.prompt_tokens - before.stats.prompt_tokens);
  const double generated = static_cast<double>(now.stats.generated_tokens - before.stats.generated_tokens);
  const double steps = static_cast<double>(now.stats.steps - before.stats.steps);
  const double graph_steps = static_cast<double>(now.stats.graph_steps - before.stats.graph_steps);
  const EngineGauges& g = now.gauges;
  return fmt::format(
      "Avg prompt throughput: {:.1f} tokens/s, Avg generation throughput: {:.1f} tokens/s, Running: {} reqs, "
      "Waiting: {} reqs, KV cache usage: {:.1f}%, Prefix cache hit rate: {:.1f}%, Graph replays: {:.1f}% of {} steps",
      seconds > 0 ? prompt / seconds : 0.0, seconds > 0 ? generated / seconds : 0.0, g.running, g.waiting,
      100.0 * g.usage, percent(static_cast<double>(g.prefix_hit_tokens), static_cast<double>(g.prefix_query_tokens)),
      percent(graph_steps, steps), static_cast<int64_t>(steps));
}

bool engine_busy(const EngineSnapshot& before, const EngineSnapshot& now) {
  return now.stats.prompt_tokens != before.stats.prompt_tokens ||
         now.stats.generated_tokens != before.stats.generated_tokens || now.gauges.running > 0 ||
         now.gauges.waiting > 0;
}

EngineStatsLogger::EngineStatsLogger(const Engine& engine, std::chrono::duration<double> interval)
    : engine_(engine), interval_(interval), thread_([this] { run(); }) {}

EngineStatsLogger::~EngineStatsLogger() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void EngineStatsLogger::run() {
  using Clock = std::chrono::steady_clock;
  EngineSnapshot before = snapshot(engine_);
  auto since = Clock::now();
  bool was_busy = false;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    const EngineSnapshot now = snapshot(engine_);
    const auto at = Clock::now();
    const bool busy = engine_busy(before, now);
    // One line after the work stops too, as vLLM does: the throughput is seen to fall to zero.
    if (busy || was_busy) log::info("{}", engine_stats_line(before, now, std::chrono::duration<double>(at - since).count()));
    was_busy = busy;
    before = now;
    since = at;
  }
}

}  // namespace fg::cli
