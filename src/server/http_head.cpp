// server/http_head.cpp — see http_head.h.
#include "server/http_head.h"

#include <fmt/format.h>
#include <strings.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <limits>

namespace fg::server {

namespace http = boost::beast::http;

HeadScanner::Result HeadScanner::bad(const char* why) {
  error_ = why;
  return Result::kBad;
}

HeadScanner::Result HeadScanner::scan(std::string_view bytes) {
  for (; pos_ < bytes.size(); ++pos_) {
    const char c = bytes[pos_];
    if (leading_) {
      // RFC 9112 2.2: empty lines before the request line are skipped (some clients send a CRLF
      // after a body). Any other byte starts the request line.
      if (c == '\r' || c == '\n') {
        if (c == '\n' && (pos_ == 0 || bytes[pos_ - 1] != '\r')) return bad("a line ends in a bare LF (want CRLF)");
        if (c == '\r' && pos_ > 0 && bytes[pos_ - 1] == '\r') return bad("a bare CR (CR must be followed by LF)");
        if (pos_ + 1 >= max_bytes_) return Result::kTooLarge;
        continue;
      }
      if (pos_ > 0 && bytes[pos_ - 1] == '\r') return bad("a bare CR before the request line");
      leading_ = false;
      head_begin_ = line_begin_ = pos_;
    }
    if (pos_ - head_begin_ >= max_bytes_)
      return in_request_line_ ? Result::kLineTooLong : Result::kTooLarge;
    if (c == '\r') continue;  // checked with the byte after it
    if (c != '\n') {
      if (pos_ > head_begin_ && bytes[pos_ - 1] == '\r') return bad("a bare CR (CR must be followed by LF)");
      // A line that starts with whitespace continues the previous field (obs-fold, RFC 9112
      // 5.2); a server must refuse it or unfold it, and unfolding is where request smuggling
      // hides. Right after the request line it would be a field name with leading space.
      if (pos_ == line_begin_ && !in_request_line_ && (c == ' ' || c == '\t'))
        return bad("obsolete line folding (a header line that starts with whitespace) is not accepted");
      continue;
    }
    if (pos_ == line_begin_ || bytes[pos_ - 1] != '\r') return bad("a line ends in a bare LF (want CRLF)");
    const bool empty_line = pos_ - line_begin_ == 1;
    in_request_line_ = false;
    line_begin_ = pos_ + 1;
    if (empty_line) {
      ++pos_;
      return Result::kComplete;
    }
  }
  return Result::kNeedMore;
}

std::optional<std::string> target_path(std::string_view target) {
  if (target == "*") return std::string(target);
  if (target.empty()) return std::nullopt;
  if (target.front() != '/') {
    // absolute-form (RFC 9112 3.2.2): a server must accept it, and serves its path.
    size_t scheme = 0;
    if (target.size() >= 7 && ::strncasecmp(target.data(), "http://", 7) == 0)
      scheme = 7;
    else if (target.size() >= 8 && ::strncasecmp(target.data(), "https://", 8) == 0)
      scheme = 8;
    else
      return std::nullopt;
    const size_t path = target.find_first_of("/?#", scheme);
    if (path == scheme) return std::nullopt;  // no authority
    target = path == std::string_view::npos ? std::string_view("/") : target.substr(path);
    if (target.front() != '/') return std::string("/");  // "http://h?q": the path is empty, i.e. "/"
  }
  return std::string(target.substr(0, target.find_first_of("?#")));
}

HeadInfo parse_head(std::string_view head, const std::string& root_path, HttpRequest& request) {
  http::request_parser<http::empty_body> parser;
  parser.eager(false);  // stop after the head: we read bodies ourselves
  parser.header_limit(static_cast<uint32_t>(std::min<size_t>(head.size() + 1, std::numeric_limits<uint32_t>::max())));
  parser.body_limit(std::numeric_limits<uint64_t>::max());  // our limit applies, after routing
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (ec || !parser.is_header_done())
    throw ApiError(400, fmt::format("malformed HTTP request: {}", ec ? ec.message() : "incomplete head"), "",
                   "bad_request");

  const auto& m = parser.get();
  request.method = std::string(m.method_string());
  request.target = std::string(m.target());
  request.version = m.version();
  request.headers.clear();
  for (const auto& field : m) request.headers.emplace_back(field.name_string(), field.value());
  if (request.version != 10 && request.version != 11)
    throw ApiError(505, fmt::format("HTTP/{}.{} is not supported; use HTTP/1.1", request.version / 10,
                                    request.version % 10),
                   "", "http_version_not_supported");
  // RFC 9112 3.2: a server must answer 400 to an HTTP/1.1 request without a Host, and to any
  // request with more than one.
  const size_t hosts = request.header_count("Host");
  if (hosts > 1 || (hosts == 0 && request.version == 11))
    throw ApiError(400, hosts > 1 ? "a request must not carry more than one Host header"
                                  : "an HTTP/1.1 request must carry a Host header",
                   "", "bad_request");

  std::optional<std::string> path = target_path(request.target);
  if (!path || (*path == "*" && request.method != "OPTIONS"))
    throw ApiError(400, "the request-target is not a path, an absolute URI, or '*' for OPTIONS", "", "bad_request");
  std::string_view p = *path;
  if (!root_path.empty() && p.substr(0, root_path.size()) == root_path &&
      (p.size() == root_path.size() || p[root_path.size()] == '/'))
    p.remove_prefix(root_path.size());
  request.path = p.empty() ? std::string("/") : std::string(p);

  HeadInfo info;
  if (const auto length = parser.content_length()) info.content_length = *length;
  info.transfer_encoding = request.header_count("Transfer-Encoding") > 0;
  info.keep_alive = parser.keep_alive();
  const auto expect = request.header("Expect");
  info.expect_continue = request.version == 11 && expect && ::strncasecmp(expect->data(), "100-continue", 12) == 0 &&
                         expect->size() == 12;
  return info;
}

}  // namespace fg::server
