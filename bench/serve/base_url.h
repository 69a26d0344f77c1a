// bench/serve/base_url.h — the server address of `bench serve`: "--base-url
// http://host:port[/prefix]" split into what cpp-httplib connects to and the path prefix that
// goes in front of /v1/... (servers behind a reverse proxy often live under one).
#pragma once

#include <string>
#include <string_view>

namespace fg::bench {

struct BaseUrl {
  std::string origin;       // "http://host:port", as httplib::Client takes it
  std::string path_prefix;  // "" or "/prefix", never ending in '/'

  // The full path of an endpoint such as "/v1/completions".
  std::string path(std::string_view endpoint) const;
};

// Errors name --base-url and say what is wrong.
BaseUrl parse_base_url(std::string_view text);

}  // namespace fg::bench
