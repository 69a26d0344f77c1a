// server/http_wire.h — the bytes of our answers: the status line and header block, the framing of
// a body (Content-Length, chunked, or delimited by closing the connection), and the answer sent to
// a connection turned away at accept. What a response says (status, headers, body) is the
// handler's; how it travels is decided here, from the request's version and keep-alive.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/http_message.h"

namespace fg::server {

enum class BodyFraming {
  kLength,   // Content-Length: the body's size (also for HEAD, without the body)
  kChunked,  // HTTP/1.1 streams
  kClose,    // HTTP/1.0 streams: no length, the body ends when the connection closes
};

struct WireHead {
  unsigned version = 11;       // of the request: an HTTP/1.0 client gets an HTTP/1.0 answer
  BodyFraming framing = BodyFraming::kLength;
  size_t content_length = 0;   // kLength
  bool keep_alive = true;      // false: "Connection: close"; on HTTP/1.0 true says "keep-alive"
  std::string_view request_id;  // echoed as X-Request-Id when not empty
};

// The status line and headers of `response` (its body not included), ending in the empty line.
std::string response_head(const HttpResponse& response, const WireHead& wire);

// One chunk of a chunked body (empty data gives nothing: an empty chunk would end the body).
std::string chunk(std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";
inline constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Whether a response with this status carries no body (1xx, 204, 304).
bool bodiless_status(int status);

// A whole 503 answer for a connection refused at the cap, written before its request is read.
const std::string& busy_response();

}  // namespace fg::server
