// server/http_cors.cpp — see http_cors.h.
#include "server/http_cors.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fg::server {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<std::string> parse_allowed_origins(std::string_view text) {
  std::vector<std::string> out;
  text = trim(text);
  if (!text.empty() && text.front() == '[') {
    const nlohmann::json list = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    FG_CHECK(list.is_array(), "--allowed-origins: '{}' is not a JSON list of strings", text);
    for (const auto& item : list) {
      FG_CHECK(item.is_string(), "--allowed-origins: '{}' is not a JSON list of strings", text);
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return out;
}

CorsPolicy::CorsPolicy(std::vector<std::string> origins) : origins_(std::move(origins)) {
  any_ = std::find(origins_.begin(), origins_.end(), "*") != origins_.end();
}

bool CorsPolicy::allowed(std::string_view origin) const {
  return any_ || std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

void CorsPolicy::decorate(const HttpRequest& request, HttpResponse& response) const {
  if (origins_.empty()) return;
  const auto origin = request.header("Origin");
  if (!origin || !allowed(*origin)) return;
  response.headers.emplace_back("Access-Control-Allow-Origin", any_ ? std::string("*") : std::string(*origin));
  if (!any_) response.headers.emplace_back("Vary", "Origin");  // the answer depends on who asks
  response.headers.emplace_back("Access-Control-Expose-Headers", "X-Request-Id");
}

void CorsPolicy::preflight(const HttpRequest& request, const std::string& methods, HttpResponse& response) const {
  if (origins_.empty() || !request.header("Access-Control-Request-Method")) return;
  const auto origin = request.header("Origin");
  if (!origin || !allowed(*origin)) return;
  response.headers.emplace_back("Access-Control-Allow-Methods", methods);
  // Any request header may be sent (vLLM's default, allow_headers=["*"]): echo what was asked.
  if (const auto asked = request.header("Access-Control-Request-Headers"))
    response.headers.emplace_back("Access-Control-Allow-Headers", std::string(*asked));
  response.headers.emplace_back("Access-Control-Max-Age", "600");
}

}  // namespace fg::server
