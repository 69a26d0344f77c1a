// server/api_error.cpp — see api_error.h.
#include "server/api_error.h"

#include <string_view>

#include "core/json/strict_json.h"

namespace fg::server {

namespace {

// At most `max_bytes` in all: clip_for_message's "... (N bytes)" tail counted in.
std::string bounded(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  return clip_for_message(text, max_bytes - 32);
}

// At most `budget` bytes once JSON-escaped (a control byte may take six, a byte past ASCII is
// counted as three in case it is replaced), cut at a UTF-8 character boundary.
std::string escaped_within(const std::string& s, size_t budget) {
  constexpr std::string_view kCut = "...";
  size_t cost = 0, end = 0;
  for (; end < s.size(); ++end) {
    const unsigned char c = static_cast<unsigned char>(s[end]);
    cost += c == '"' || c == '\\' ? 2 : c < 0x20 ? 6 : c >= 0x80 ? 3 : 1;
    if (cost > budget - kCut.size()) break;
  }
  if (end == s.size()) return s;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + std::string(kCut);
}

}  // namespace

const char* error_type_for_status(int status) { return status >= 500 ? "server_error" : "invalid_request_error"; }

ApiError::ApiError(int status, const std::string& message, const std::string& param, std::string code,
                   std::string type)
    : Error(bounded(message, kMaxErrorMessageBytes)),
      status_(status),
      param_(bounded(param, kMaxErrorParamBytes)),
      code_(std::move(code)),
      type_(type.empty() ? error_type_for_status(status) : std::move(type)) {}

nlohmann::ordered_json ApiError::body() const {
  // Budgets that keep the whole body under 1 KiB.
  nlohmann::ordered_json error = {{"message", escaped_within(what(), 640)},
                                  {"type", escaped_within(type_, 40)},
                                  {"param", nullptr},
                                  {"code", nullptr}};
  if (!param_.empty()) error["param"] = escaped_within(param_, 120);
  if (!code_.empty()) error["code"] = escaped_within(code_, 60);
  return {{"error", error}};
}

void bad_request(const std::string& param, const std::string& message) { throw ApiError(400, message, param); }

}  // namespace fg::server
