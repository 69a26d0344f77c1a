// server/api_key.cpp — see api_key.h.
#include "server/api_key.h"

#include <cctype>

namespace fg::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of b is visited whatever a holds; a length mismatch only sets a bit.
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < b.size(); ++i) {
    const unsigned char x = a.empty() ? 0 : static_cast<unsigned char>(a[i % a.size()]);
    diff |= x ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

bool bearer_token_matches(std::string_view authorization, std::string_view key) {
  constexpr std::string_view kScheme = "bearer ";
  if (key.empty() || authorization.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  return constant_time_equal(token, key);
}

}  // namespace fg::server
