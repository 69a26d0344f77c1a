// core/log.h — the engine's log on stderr, one line per event, through spdlog (thread-safe, so the
// server's I/O threads, the engine thread and the CLI can all write). Lines read "fullgraph: ..."
// at info; warnings and errors say so ("fullgraph: warning: ..."). The level is process-wide and
// set once at start (--log-level): messages below it cost one comparison.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

namespace fg::log {

enum class Level { kDebug, kInfo, kWarning, kError, kOff };

// "debug", "info", "warning" (or "warn"), "error", "critical" (as error), "off"; throws fg::Error
// naming the choices otherwise.
Level parse_level(std::string_view name);
void set_level(Level level);
bool enabled(Level level);
// Writes one line at `level` (when enabled).
void write(Level level, const std::string& message);

template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::kDebug)) write(Level::kDebug, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::kInfo)) write(Level::kInfo, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void warning(fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::kWarning)) write(Level::kWarning, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::kError)) write(Level::kError, fmt::format(format, std::forward<Args>(args)...));
}

// The log as a callback, for code that takes one (the runner's and the server's startup reports).
inline void info_line(const std::string& line) { info("{}", line); }

}  // namespace fg::log
