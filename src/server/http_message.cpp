// server/http_message.cpp — see http_message.h.
#include "server/http_message.h"

#include <strings.h>

namespace fg::server {

namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

template <typename Json>
HttpResponse json_response(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return r;
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (same_name(key, name)) return std::string_view(value);
  return std::nullopt;
}

size_t HttpRequest::header_count(std::string_view name) const {
  size_t n = 0;
  for (const auto& [key, value] : headers) n += same_name(key, name) ? 1 : 0;
  return n;
}

HttpResponse HttpResponse::json(int status, const nlohmann::ordered_json& body) { return json_response(status, body); }
HttpResponse HttpResponse::json(int status, const nlohmann::json& body) { return json_response(status, body); }
HttpResponse HttpResponse::error(const ApiError& error) { return json(error.status(), error.body()); }

}  // namespace fg::server
