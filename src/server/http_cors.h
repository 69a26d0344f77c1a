// server/http_cors.h — CORS (the Fetch standard's cross-origin checks) for browser clients:
// which origins may read our answers (--allowed-origins), the headers that tell a browser so on
// every answer, and the answer to a preflight (OPTIONS with Access-Control-Request-Method).
// With no allowed origin, no CORS header is ever sent, and browsers keep other origins out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/http_message.h"

namespace fg::server {

// --allowed-origins: a JSON list ('["https://a.example", "*"]', vLLM's spelling) or a comma
// list ("https://a.example,https://b.example"). Throws fg::Error on a malformed JSON list.
std::vector<std::string> parse_allowed_origins(std::string_view text);

class CorsPolicy {
 public:
  explicit CorsPolicy(std::vector<std::string> origins);

  // Adds Access-Control-Allow-Origin (and Vary, Expose-Headers) when the request's Origin is
  // allowed.
  void decorate(const HttpRequest& request, HttpResponse& response) const;
  // Adds a preflight's answer headers (methods, requested headers, max age) when the request is
  // a preflight from an allowed origin. `methods`: what the path accepts, e.g. "POST, OPTIONS".
  void preflight(const HttpRequest& request, const std::string& methods, HttpResponse& response) const;

 private:
  bool allowed(std::string_view origin) const;

  std::vector<std::string> origins_;
  bool any_ = false;  // "*" was given
};

}  // namespace fg::server
