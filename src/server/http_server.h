// server/http_server.h — the HTTP/1.1 front door, event-driven on Boost.Asio: one listening
// socket, a fixed pool of I/O threads (--http-threads) that serve every connection (no thread per
// connection, none per request), exact-path routes with 404 for unknown paths and 405 (with
// Allow) for wrong methods, OPTIONS answered 204 (a CORS preflight when --allowed-origins allows
// the origin), the optional API key, and errors in OpenAI's JSON shape whoever raises them.
//
// What each piece owns: server/http_connection.h one connection's state machine and deadlines;
// server/http_head.h the request head (Beast's parser plus RFC 9112's rules it lacks);
// server/http_wire.h the bytes of our answers; server/http_registry.h the connection cap and
// eviction; server/http_transport.h plain TCP or TLS; server/http_message.h what handlers see.
//
// Handlers run on an I/O thread and must not wait: see HttpExchange.
// Shutdown: drain() stops accepting; idle connections close, answers in flight finish, new
// requests on open connections get 503; run() returns when the last connection has closed.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "server/http_message.h"
#include "server/http_options.h"

namespace fg::server {

class HttpServer {
 public:
  using Handler = std::function<void(const std::shared_ptr<HttpExchange>&)>;

  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();

  // Exact-path routes (also served under options.root_path); a path ending in "/*" matches every
  // path under it with a non-empty rest (e.g. "/v1/models/*": "/v1/models/tiny"). `is_public`
  // routes are served without the API key. A GET route answers HEAD too.
  void get(const std::string& path, Handler handler, bool is_public);
  void post(const std::string& path, Handler handler, bool is_public);

  // Binds the listening socket, loads the TLS files and raises the descriptor limit to fit the
  // connection cap; throws fg::Error when it cannot (e.g. the port is taken).
  void bind();
  int port() const;
  // Serves until drained, on the calling thread and options.io_threads - 1 more. Call bind() first.
  void run();
  // Starts the drain (idempotent, any thread, also before run()).
  void drain();
  bool draining() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fg::server
