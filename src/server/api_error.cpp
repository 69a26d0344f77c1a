// server/api_error.cpp — see api_error.h.
#include "server/api_error.h"

#include "core/json/strict_json.h"

namespace fg::server {

namespace {

// At most `max_bytes` in all: clip_for_message's "... (N bytes)" tail counted in.
std::string bounded(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  return clip_for_message(text, max_bytes - 32);
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
  nlohmann::ordered_json error = {{"message", what()}, {"type", type_}, {"param", nullptr}, {"code", nullptr}};
  if (!param_.empty()) error["param"] = param_;
  if (!code_.empty()) error["code"] = code_;
  return {{"error", error}};
}

void bad_request(const std::string& param, const std::string& message) { throw ApiError(400, message, param); }

}  // namespace fg::server
