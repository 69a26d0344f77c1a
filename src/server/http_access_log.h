// server/http_access_log.h — request ids and the access log: one line per request through
// fg::log (method, path, status, tokens, time to first token, duration, request id), unless
// --disable-log-requests.
#pragma once

#include <string>

#include "server/http_message.h"

namespace fg::server {

// The client's X-Request-Id when it is a sane token (1..128 visible ASCII characters), else a
// fresh random one (32 hex digits).
std::string request_id_for(const HttpRequest& request);

struct AccessLogEntry {
  const HttpRequest* request = nullptr;  // null: no head could be parsed (e.g. 400, 408, 414)
  std::string remote;
  int status = 0;
  double duration_s = 0;
  GenerationLogFields generation;
};

void log_access(const AccessLogEntry& entry);

}  // namespace fg::server
