// server/api_key.h — the optional `--api-key` check: "Authorization: Bearer <key>", compared in
// constant time so that the time a wrong key takes says nothing about how much of it was right.
#pragma once

#include <string_view>

namespace fg::server {

// Whether `authorization` (the header's value, possibly empty) is "Bearer <key>" (the scheme
// case-insensitive, as RFC 7235 says). `key` must not be empty.
bool bearer_token_matches(std::string_view authorization, std::string_view key);

// Compares a and b in time that depends only on their lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace fg::server
