// server/http_head.h — a request's head (request line and header fields) from the bytes received:
// where it ends, its parse, and the RFC 9112 rules that Beast's parser leaves to us.
//
// Beast (boost::beast::http::request_parser) parses the request line and the fields: tokens,
// the version, field-name syntax (a space in a name or a line without a colon is an error),
// Content-Length and Transfer-Encoding, keep-alive. Ours, before and after it:
//  - HeadScanner finds the end of the head as bytes trickle in, and refuses, without waiting
//    for more: a request line longer than the header limit (414), a head longer than it (431),
//    a bare CR or LF (400), an obs-fold continuation line (400; Beast would join it);
//  - parse_head() refuses versions other than 1.0 and 1.1 (505), an HTTP/1.1 request without
//    exactly one Host, or any request with several (400); and turns the request-target into a
//    path: origin-form as is, absolute-form ("http://host/p") as its path, "*" for OPTIONS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/http_message.h"

namespace fg::server {

class HeadScanner {
 public:
  enum class Result { kNeedMore, kComplete, kBad, kLineTooLong, kTooLarge };

  explicit HeadScanner(size_t max_bytes) : max_bytes_(max_bytes) {}

  // `bytes`: everything received of this request so far (the same prefix each call, longer).
  // Resumes where the last call stopped.
  Result scan(std::string_view bytes);
  // After kComplete: the head, without the empty lines a client may send before the request line.
  size_t head_begin() const { return head_begin_; }
  size_t head_end() const { return pos_; }  // just past the CRLF CRLF
  // After kBad: what was wrong.
  const char* error() const { return error_; }

 private:
  Result bad(const char* why);

  size_t max_bytes_;
  size_t pos_ = 0;         // bytes scanned
  size_t head_begin_ = 0;  // past the leading empty lines
  size_t line_begin_ = 0;  // start of the line being scanned
  bool in_request_line_ = true;
  bool leading_ = true;  // still in the empty lines before the request line
  const char* error_ = "";
};

// What the head says about the rest of the request.
struct HeadInfo {
  std::optional<uint64_t> content_length;
  bool transfer_encoding = false;  // any Transfer-Encoding (we refuse request bodies sent so)
  bool keep_alive = true;          // Beast's reading of version and Connection
  bool expect_continue = false;    // "Expect: 100-continue" on HTTP/1.1

  bool has_body() const { return transfer_encoding || content_length.value_or(0) > 0; }
};

// Parses a complete head (HeadScanner's [head_begin, head_end)) into `request`'s method, target,
// path, version and headers. `root_path` ("" or "/prefix") is removed from the front of the path.
// Throws ApiError: 400 for what is malformed, 505 for an unsupported version.
HeadInfo parse_head(std::string_view head, const std::string& root_path, HttpRequest& request);

// The path of a request-target, or nullopt when it is none of origin-form, absolute-form or "*".
std::optional<std::string> target_path(std::string_view target);

}  // namespace fg::server
