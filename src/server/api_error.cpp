// server/api_error.cpp — see api_error.h.
#include "server/api_error.h"

namespace fg::server {

namespace {

// At most `budget` bytes once JSON-escaped (a control byte may take six, a byte past ASCII is
// counted as three in case it is replaced), cut at a UTF-8 character boundary. An error message
// may quote the request (a parse error shows what it read, a field name is the client's), and a
// 4 MB body must not come back as a 4 MB error.
std::string bounded(const std::string& s, size_t budget) {
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

ApiError::ApiError(int status, std::string message, std::string param, std::string code, std::string type)
    : Error(message),
      status_(status),
      param_(std::move(param)),
      code_(std::move(code)),
      type_(type.empty() ? error_type_for_status(status) : std::move(type)) {}

nlohmann::ordered_json ApiError::body() const {
  // Budgets that keep the whole body under 1 KiB.
  nlohmann::ordered_json error = {
      {"message", bounded(what(), 640)}, {"type", bounded(type_, 40)}, {"param", nullptr}, {"code", nullptr}};
  if (!param_.empty()) error["param"] = bounded(param_, 120);
  if (!code_.empty()) error["code"] = bounded(code_, 60);
  return {{"error", error}};
}

void bad_request(const std::string& param, const std::string& message) { throw ApiError(400, message, param); }

}  // namespace fg::server
