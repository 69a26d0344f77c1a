// server/api_error.cpp — see api_error.h.
#include "server/api_error.h"

namespace fg::server {

const char* error_type_for_status(int status) { return status >= 500 ? "server_error" : "invalid_request_error"; }

ApiError::ApiError(int status, std::string message, std::string param, std::string code, std::string type)
    : Error(message),
      status_(status),
      param_(std::move(param)),
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
