// grammar/xgrammar_log.cpp — the logging hooks xgrammar calls (see xgrammar_log.h). They are
// defined here, in the library that calls xgrammar, and declared here too: the header that
// declares them is internal to xgrammar's sources.
#include "grammar/xgrammar_log.h"

#include <string>
#include <string_view>

#include "core/error.h"
#include "core/json/strict_json.h"
#include "core/log.h"

namespace xgrammar {

[[noreturn]] void LogFatalImpl(const std::string& file, int lineno, const std::string& message);
void LogMessageImpl(const std::string& file, int lineno, int level, const std::string& message);

[[noreturn]] void LogFatalImpl(const std::string& /*file*/, int /*lineno*/, const std::string& message) {
  throw fg::Error(message);
}

void LogMessageImpl(const std::string& /*file*/, int /*lineno*/, int level, const std::string& message) {
  constexpr int kWarning = 2;  // XGRAMMAR_LOG_LEVEL_WARNING
  if (level >= kWarning)
    fg::log::warning("xgrammar: {}", message);
  else
    fg::log::debug("xgrammar: {}", message);
}

}  // namespace xgrammar

namespace fg::grammar_detail {

std::string xgrammar_message(const std::exception& e, size_t max_bytes) {
  std::string_view text = e.what();
  // XGRAMMAR_CHECK's messages open with the condition that failed; what follows the marker is the
  // part written for the user.
  constexpr std::string_view kMarker = ") is false: ";
  if (text.starts_with("Check failed: (")) {
    if (const size_t at = text.find(kMarker); at != std::string_view::npos) text.remove_prefix(at + kMarker.size());
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return clip_for_message(text, max_bytes);
}

}  // namespace fg::grammar_detail
