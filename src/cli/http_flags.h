// cli/http_flags.h — `fullgraph serve`'s flags for the HTTP layer (server/http_options.h): the
// I/O threads, the connection cap, the deadlines, TLS, CORS, the root path and the access log.
// vLLM's names where vLLM has the flag (--ssl-keyfile, --allowed-origins, --root-path,
// --disable-log-requests).
#pragma once

#include <CLI/CLI.hpp>

#include "server/http_options.h"

namespace fg::cli {

// `options` must outlive the parse (the command's callback reads it).
void add_http_flags(CLI::App& cmd, server::HttpServerOptions& options);

}  // namespace fg::cli
