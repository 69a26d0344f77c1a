// server/http_wire.cpp — see http_wire.h.
#include "server/http_wire.h"

#include <fmt/format.h>

#include <boost/beast/http/status.hpp>

namespace fg::server {

bool bodiless_status(int status) { return (status >= 100 && status < 200) || status == 204 || status == 304; }

std::string response_head(const HttpResponse& response, const WireHead& wire) {
  const auto reason = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(response.status));
  std::string out = fmt::format("HTTP/1.{} {} {}\r\n", wire.version == 10 ? 0 : 1, response.status,
                                std::string_view(reason.data(), reason.size()));
  const auto header = [&out](std::string_view name, std::string_view value) {
    out.append(name).append(": ").append(value).append("\r\n");
  };
  if (!response.content_type.empty()) header("Content-Type", response.content_type);
  if (!bodiless_status(response.status)) {
    switch (wire.framing) {
      case BodyFraming::kLength:
        header("Content-Length", std::to_string(wire.content_length));
        break;
      case BodyFraming::kChunked:
        header("Transfer-Encoding", "chunked");
        break;
      case BodyFraming::kClose:
        break;
    }
  }
  // A close-delimited body needs the close; HTTP/1.0 keeps a connection only when told to.
  const bool keep_alive = wire.keep_alive && wire.framing != BodyFraming::kClose;
  if (!keep_alive)
    header("Connection", "close");
  else if (wire.version == 10)
    header("Connection", "keep-alive");
  if (!wire.request_id.empty()) header("X-Request-Id", wire.request_id);
  for (const auto& [name, value] : response.headers) header(name, value);
  out += "\r\n";
  return out;
}

std::string chunk(std::string_view data) {
  if (data.empty()) return {};
  std::string out = fmt::format("{:x}\r\n", data.size());
  out.reserve(out.size() + data.size() + 2);
  out.append(data).append("\r\n");
  return out;
}

const std::string& busy_response() {
  static const std::string response = [] {
    HttpResponse r = HttpResponse::error(
        ApiError(503, "the server has too many connections; retry later", "", "server_busy"));
    r.headers.emplace_back("Retry-After", "1");
    WireHead wire;
    wire.content_length = r.body.size();
    wire.keep_alive = false;
    return response_head(r, wire) + r.body;
  }();
  return response;
}

}  // namespace fg::server
