// server/api_error.h — the one error a request can end with: an HTTP status plus OpenAI's error
// body {"error": {"message", "type", "param", "code"}}. Everything the server refuses is thrown as
// an ApiError where it is found, so that the field at fault travels with the message.
//
// An error body never carries a request back whole: the message is cut to kMaxErrorMessageBytes
// and the param to kMaxErrorParamBytes (never inside a UTF-8 sequence, saying how long the full
// text was), whatever the thrower put in them; and body() fits the whole JSON body, escaping
// included, in 1 KiB. Throwers quote excerpts of what they refuse; the cuts here are the bounds
// that hold even where one forgot.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace fg::server {

inline constexpr size_t kMaxErrorMessageBytes = 1024;
inline constexpr size_t kMaxErrorParamBytes = 128;

class ApiError : public Error {
 public:
  // `param` names the request field at fault ("" when no single field is); `code` is OpenAI's
  // machine-readable code ("" for none). `type` is derived from the status unless given.
  ApiError(int status, const std::string& message, const std::string& param = "", std::string code = "",
           std::string type = "");

  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  const std::string& type() const { return type_; }
  nlohmann::ordered_json body() const;  // {"error": {"message", "type", "param", "code"}}

 private:
  int status_;
  std::string param_, code_, type_;
};

// A 400 naming the field (the common case).
[[noreturn]] void bad_request(const std::string& param, const std::string& message);

// OpenAI's error type for a status: "invalid_request_error" for 4xx, "server_error" for 5xx.
const char* error_type_for_status(int status);

}  // namespace fg::server
