// server/http_message.h — what a route handler sees of HTTP: the request (parsed and checked
// already), the response it answers with, and the exchange through which it answers, at once or
// later, whole or streamed. No Boost type appears here: the handlers (server/api_server.cpp,
// server/generation_exchange.cpp) know nothing of the transport.
//
// Threads: a handler runs on its connection's strand, an I/O thread that serves many
// connections, so it must never wait. Work that takes time (a generation) is started, and the
// exchange is woken (wake(), from any thread) when there is something to send; the callbacks it
// registers run on the strand again.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api_error.h"

namespace fg::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // as sent, e.g. "POST"
  std::string target;  // as sent: origin-form "/v1/x?y", absolute-form "http://h/v1/x", or "*"
  std::string path;    // the target's path: no scheme, authority or query; the root path removed
  unsigned version = 11;  // 10 or 11 (HTTP/1.0, HTTP/1.1)
  HttpHeaders headers;    // as sent, in order
  std::string body;
  std::string request_id;  // the client's X-Request-Id, or one we made
  std::string remote;      // "address:port" of the client

  // The first value of header `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;
  size_t header_count(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type;  // "" with an empty body: no Content-Type
  HttpHeaders headers;       // besides Content-Type, Content-Length, Connection, framing
  std::string body;

  static HttpResponse json(int status, const nlohmann::ordered_json& body);
  static HttpResponse json(int status, const nlohmann::json& body);
  // OpenAI's error body for `error`, with its status.
  static HttpResponse error(const ApiError& error);
};

// What the access-log line of a generation request says beyond the transport's own fields.
struct GenerationLogFields {
  int64_t prompt_tokens = -1;      // -1: not a generation
  int64_t completion_tokens = -1;
  double time_to_first_token_s = -1;  // -1: no token was sent
};

// One request and its answer. Every member but wake() is for the connection's strand: the
// handler itself, or a callback registered below.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;

  virtual const HttpRequest& request() const = 0;

  // A whole answer; ends the exchange.
  virtual void respond(HttpResponse response) = 0;
  // A streamed answer: status and headers now (`head.body` ignored), body pieces with write(),
  // end_stream() last. Chunked on HTTP/1.1; on HTTP/1.0, close-delimited.
  virtual void start_stream(HttpResponse head) = 0;
  virtual void write(std::string data) = 0;
  virtual void end_stream() = 0;
  // Bytes written and not yet taken by the client's socket: a streaming handler writes more only
  // when this is false (it is woken again when it turns false), so a slow reader is not buffered
  // without bound.
  virtual bool output_pending() const = 0;
  // The head the answer will have (status and content type) when it is not ready yet. The
  // transport may send it early: a client that half-closes (EOF) may still read, and only a write
  // tells whether it does (one that closed answers with a reset, and the exchange is aborted).
  // respond() then sends its body under this head; its status must be the same.
  virtual void set_provisional_head(HttpResponse head) = 0;

  // Runs `fn` on the strand after each wake() (several wakes before it runs make one call) and,
  // while streaming, each time the output drains.
  virtual void on_wake(std::function<void()> fn) = 0;
  // Runs `fn` once, on the strand, when the exchange ends without its answer complete: the client
  // left, a write failed or timed out, the server was stopped.
  virtual void on_abort(std::function<void()> fn) = 0;
  // Tokens and time to first token, for the request's access-log line.
  virtual void set_log_fields(const GenerationLogFields& fields) = 0;

  // Any thread: schedules the on_wake callback.
  virtual void wake() = 0;
};

}  // namespace fg::server
