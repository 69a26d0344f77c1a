// cli/http_flags.cpp — see http_flags.h.
#include "cli/http_flags.h"

#include "server/http_cors.h"

namespace fg::cli {

void add_http_flags(CLI::App& cmd, server::HttpServerOptions& h) {
  cmd.add_option("--http-threads", h.io_threads,
                 "I/O threads that serve every connection (0: min(4, hardware threads)); handlers never block them")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  cmd.add_option("--max-connections", h.max_connections,
                 "Open connections at most; at the cap the oldest idle one is closed for a new one, and a new one "
                 "is refused (503) when none is idle")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  cmd.add_option("--http-read-timeout", h.read_timeout_s,
                 "Seconds within which a whole request (TLS handshake, headers and body) must arrive (else 408)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd.add_option("--http-write-timeout", h.write_timeout_s, "Seconds a client may stall reading before it is dropped")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd.add_option("--keep-alive-timeout", h.keep_alive_timeout_s, "Seconds an idle connection stays open")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd.add_option("--ssl-keyfile", h.ssl_keyfile, "TLS: the private key (PEM); with --ssl-certfile, serve HTTPS")
      ->check(CLI::ExistingFile);
  cmd.add_option("--ssl-certfile", h.ssl_certfile, "TLS: the certificate chain (PEM); with --ssl-keyfile")
      ->check(CLI::ExistingFile);
  cmd.add_option_function<std::string>(
      "--allowed-origins", [&h](const std::string& text) { h.allowed_origins = server::parse_allowed_origins(text); },
      "CORS: origins whose browser pages may call the API, as a JSON list ('[\"https://a.example\"]', '[\"*\"]') "
      "or a comma list (default: none, no CORS headers)");
  cmd.add_option("--root-path", h.root_path, "Also serve every route under this prefix (e.g. /api behind a proxy)")
      ->transform([](std::string path) {
        while (path.size() > 1 && path.back() == '/') path.pop_back();
        if (path == "/") path.clear();
        if (!path.empty() && path.front() != '/') throw CLI::ValidationError("--root-path", "must start with '/'");
        return path;
      });
  cmd.add_flag_callback(
      "--disable-log-requests", [&h] { h.log_requests = false; }, "No access-log line per request");
}

}  // namespace fg::cli
