// server/http_options.h — every knob of the HTTP layer in one struct: where it listens, the pool
// of I/O threads, the limits a client meets (sizes, deadlines, the connection cap), TLS, CORS,
// the root path and the access log. The CLI fills it (cli/serve_http_flags.cpp); the layer only
// reads it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fg::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0: any free port (see HttpServer::port())
  std::string api_key;  // empty: no key needed

  // The I/O threads: every connection is served by these, whatever their number.
  int io_threads = 0;  // 0: min(4, hardware threads)

  // Sizes. The request line and the whole header block share max_header_bytes: a request line
  // that alone exceeds it gets 414, a header block that does gets 431, a body over
  // max_body_bytes gets 413 before a byte of it is read.
  size_t max_header_bytes = 64 << 10;
  size_t max_body_bytes = 4 << 20;

  // Deadlines, each enforced by the connection's timer.
  int read_timeout_s = 30;       // a whole request (TLS handshake, line, headers, body): 408 after
  int write_timeout_s = 60;      // a client that reads nothing of our answer for this long is dropped
  int keep_alive_timeout_s = 5;  // an idle connection closes after this
  size_t keep_alive_max_requests = 1000;

  // Open connections. At the cap the oldest idle one is closed to make room; when none is idle,
  // a new connection is answered 503 and closed. The process's descriptor limit is raised to fit.
  size_t max_connections = 16384;

  // TLS: both set, or neither (plain HTTP). PEM files, read once at start.
  std::string ssl_keyfile, ssl_certfile;

  // CORS: origins allowed to read our answers from a browser ("*": any). Empty: no CORS headers.
  std::vector<std::string> allowed_origins;
  // Routes are also served under this prefix (e.g. "/api" behind a proxy); "" for none.
  std::string root_path;

  bool log_requests = true;  // one access-log line per request
};

}  // namespace fg::server
