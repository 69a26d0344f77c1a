// server/http_server.h — the HTTP/1.1 front: cpp-httplib's parser and response writer, with the
// connection handling taken over (server/connection_stream.h) so that the limits are ours:
// request body and header sizes, a deadline per request, write timeouts, chunked request bodies
// refused (411), a bounded number of connections being served and waiting (503 beyond), exact
// routes with 404 for unknown paths and 405 for wrong methods, the optional API key, and errors
// in OpenAI's JSON shape whoever raises them (a handler or the library's parser).
//
// Threads: one per connection being served (a streamed response keeps its thread until it ends).
// Shutdown: drain() stops accepting; requests in flight finish, idle keep-alive connections
// close, new requests on open connections get 503; run() returns when the last one is done.
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"

namespace fg::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0: any free port (see HttpServer::port())
  std::string api_key;  // empty: no key needed
  size_t max_body_bytes = 4 << 20;
  size_t max_header_bytes = 64 << 10;
  int read_timeout_s = 30;       // a whole request (line, headers, body) must arrive within this
  int write_timeout_s = 60;      // a client that reads nothing for this long is dropped
  int keep_alive_timeout_s = 5;  // an idle connection closes after this
  size_t keep_alive_max_requests = 1000;
  size_t max_connections = 512;          // connections served at once (one thread each)
  size_t max_pending_connections = 128;  // accepted, waiting for a thread; beyond this: 503
};

class HttpServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();

  // Exact-path routes. `is_public` routes are served without the API key.
  void get(const std::string& path, Handler handler, bool is_public);
  void post(const std::string& path, Handler handler, bool is_public);

  // Binds the listening socket; throws fg::Error when it cannot (e.g. the port is taken).
  void bind();
  int port() const;
  // Accepts and serves until drained (blocks). Call bind() first.
  void run();
  // Starts the drain (idempotent, any thread, also before run()).
  void drain();
  bool draining() const;

  // For handlers, which run on the thread of their connection:
  // whether the client of the request being handled has closed its connection;
  static bool client_gone();
  // that the connection must close after `res` (which then says so: "Connection: close").
  static void close_after_response(httplib::Response& res);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Response helpers: JSON bodies, and ApiError as OpenAI's error body with its status.
void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body);
void send_error(httplib::Response& res, const ApiError& error);

}  // namespace fg::server
