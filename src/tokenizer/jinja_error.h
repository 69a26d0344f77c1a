// tokenizer/jinja_error.h — the error raised inside the chat-template engine.
//
// Deep helpers (a filter, a string method) do not know which template line they serve, so they
// throw TemplateError with line 0 and the interpreter stamps the line of the innermost node that
// was being evaluated. The public entry points turn it into the final message
// "chat template line N: ...". It derives from fg::Error so that nothing else ever escapes.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

#include "core/error.h"

namespace fg::jinja {

class TemplateError : public fg::Error {
 public:
  explicit TemplateError(std::string message, int line = 0)
      : fg::Error(message), message_(std::move(message)), line_(line) {}
  const std::string& message() const { return message_; }
  int line() const { return line_; }

 private:
  std::string message_;
  int line_;
};

template <typename... Args>
[[noreturn]] void raise(fmt::format_string<Args...> format, Args&&... args) {
  throw TemplateError(fmt::format(format, std::forward<Args>(args)...));
}

// The final, user-facing form of an error from the engine.
inline std::string describe_template_error(const TemplateError& e) {
  if (e.line() > 0) return fmt::format("chat template line {}: {}", e.line(), e.message());
  return fmt::format("chat template: {}", e.message());
}

}  // namespace fg::jinja
