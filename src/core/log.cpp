// core/log.cpp — one spdlog logger on stderr, created on first use.
#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>

#include "core/error.h"

namespace fg::log {

namespace {

std::atomic<Level> g_level{Level::kInfo};

spdlog::logger& logger() {
  // stderr unbuffered, no colours: lines land in order with the rest of stderr and read the same
  // in a terminal, a pipe or a file.
  static const std::shared_ptr<spdlog::logger> instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto l = std::make_shared<spdlog::logger>("fullgraph", sink);
    l->set_pattern("fullgraph: %v");
    l->set_level(spdlog::level::trace);  // filtering is ours (enabled())
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return *instance;
}

}  // namespace

Level parse_level(std::string_view name) {
  if (name == "debug" || name == "trace") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warning" || name == "warn") return Level::kWarning;
  if (name == "error" || name == "critical") return Level::kError;
  if (name == "off") return Level::kOff;
  fail("unknown log level '{}' (expected debug, info, warning, error, critical or off)", name);
}

void set_level(Level level) { g_level.store(level, std::memory_order_relaxed); }

bool enabled(Level level) { return level != Level::kOff && level >= g_level.load(std::memory_order_relaxed); }

void write(Level level, const std::string& message) {
  switch (level) {
    case Level::kDebug: logger().info("debug: {}", message); return;
    case Level::kWarning: logger().info("warning: {}", message); return;
    case Level::kError: logger().info("error: {}", message); return;
    default: logger().info("{}", message); return;
  }
}

}  // namespace fg::log
