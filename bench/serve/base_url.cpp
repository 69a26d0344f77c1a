// bench/serve/base_url.cpp — scheme, authority and path prefix of --base-url.
#include "bench/serve/base_url.h"

#include "core/error.h"

namespace fg::bench {

std::string BaseUrl::path(std::string_view endpoint) const {
  std::string out = path_prefix;
  if (endpoint.empty() || endpoint.front() != '/') out.push_back('/');
  out.append(endpoint);
  return out;
}

BaseUrl parse_base_url(std::string_view text) {
  const size_t sep = text.find("://");
  FG_CHECK(sep != std::string_view::npos, "--base-url '{}' has no scheme (expected http://host:port)", text);
  const std::string_view scheme = text.substr(0, sep);
  FG_CHECK(scheme == "http" || scheme == "https", "--base-url '{}': unsupported scheme '{}' (http or https)", text,
           scheme);
  const std::string_view rest = text.substr(sep + 3);
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  FG_CHECK(!authority.empty(), "--base-url '{}' has no host", text);
  FG_CHECK(authority.find_first_of("?#@ ") == std::string_view::npos,
           "--base-url '{}': the host part '{}' holds a character that is not allowed there", text, authority);
  BaseUrl url;
  url.origin = std::string(scheme) + "://" + std::string(authority);
  if (slash != std::string_view::npos) {
    std::string_view prefix = rest.substr(slash);
    FG_CHECK(prefix.find_first_of("?#") == std::string_view::npos,
             "--base-url '{}': a query or fragment makes no sense in a base URL", text);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    url.path_prefix = std::string(prefix);
  }
  return url;
}

}  // namespace fg::bench
