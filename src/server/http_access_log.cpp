// server/http_access_log.cpp — see http_access_log.h.
#include "server/http_access_log.h"

#include <fmt/format.h>

#include <random>

#include "core/log.h"

namespace fg::server {

namespace {

// A path for the log: at most 200 bytes, control and non-ASCII bytes as \xNN, so a client cannot
// forge log lines or flood the log through its request-target.
std::string printable(std::string_view s, size_t max_bytes = 200) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  if (out.size() >= max_bytes) out += "...";
  return out;
}

}  // namespace

std::string request_id_for(const HttpRequest& request) {
  if (const auto given = request.header("X-Request-Id")) {
    bool sane = !given->empty() && given->size() <= 128;
    for (char c : *given) sane = sane && c > 0x20 && c < 0x7f;
    if (sane) return std::string(*given);
  }
  thread_local std::mt19937_64 random{std::random_device{}()};
  return fmt::format("{:016x}{:016x}", random(), random());
}

void log_access(const AccessLogEntry& e) {
  if (!log::enabled(log::Level::kInfo)) return;
  std::string line = e.request == nullptr
                         ? fmt::format("{} \"-\" {}", e.remote, e.status)
                         : fmt::format("{} \"{} {} HTTP/1.{}\" {}", e.remote, printable(e.request->method, 16),
                                       printable(e.request->path), e.request->version == 10 ? 0 : 1, e.status);
  const GenerationLogFields& g = e.generation;
  if (g.prompt_tokens >= 0) line += fmt::format(" prompt_tokens={}", g.prompt_tokens);
  if (g.completion_tokens >= 0) line += fmt::format(" completion_tokens={}", g.completion_tokens);
  if (g.time_to_first_token_s >= 0) line += fmt::format(" ttft={:.3f}s", g.time_to_first_token_s);
  line += fmt::format(" duration={:.3f}s", e.duration_s);
  if (e.request != nullptr) line += fmt::format(" request_id={}", printable(e.request->request_id, 128));
  log::info("{}", line);
}

}  // namespace fg::server
