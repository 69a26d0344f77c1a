// bench/serve/openai_client.cpp — cpp-httplib requests: GET /v1/models and a streamed POST.
#include "bench/serve/openai_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "bench/common/clock.h"
#include "bench/serve/stream_recorder.h"
#include "core/error.h"

namespace fg::bench {

namespace {

// Error bodies are quoted into reports; a server that answers with a whole HTML page should not
// flood them.
constexpr size_t kMaxErrorBody = 2048;

std::unique_ptr<httplib::Client> connect(const ServerConnection& server) {
  auto client = std::make_unique<httplib::Client>(server.url.origin);
  FG_CHECK(client->is_valid(), "--base-url '{}': cpp-httplib cannot connect to it (https needs a build with OpenSSL)",
           server.url.origin);
  const auto timeout = std::chrono::duration<double>(server.timeout_s);
  client->set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(
      std::min(timeout, std::chrono::duration<double>(30.0))));
  client->set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client->set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client->set_keep_alive(false);
  return client;
}

httplib::Headers auth_headers(const ServerConnection& server) {
  httplib::Headers headers;
  if (!server.api_key.empty()) headers.emplace("Authorization", "Bearer " + server.api_key);
  return headers;
}

// "HTTP 400: <the OpenAI error message, or the body>".
std::string http_error(int status, const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    const auto error = j.find("error");
    if (error != j.end() && error->is_object() && error->contains("message") && (*error)["message"].is_string())
      return fmt::format("HTTP {}: {}", status, (*error)["message"].get<std::string>());
  }
  return fmt::format("HTTP {}: {}", status, body.substr(0, kMaxErrorBody));
}

// httplib's error names ("Connection", "Read") are terse; say what they mean for a benchmark.
std::string transport_error(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection: return "could not connect (is the server up at --base-url?)";
    case httplib::Error::ConnectionTimeout: return "connecting timed out";
    case httplib::Error::Read: return "the connection failed or went silent past --timeout while reading";
    case httplib::Error::Write: return "the connection failed while sending the request";
    default: return "HTTP client error: " + httplib::to_string(error);
  }
}

std::optional<int64_t> optional_int(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

std::vector<ServedModel> fetch_models(const ServerConnection& server) {
  const std::string path = server.url.path("/v1/models");
  const std::string where = server.url.origin + path;
  auto client = connect(server);
  const httplib::Result res = client->Get(path, auth_headers(server));
  FG_CHECK(res, "GET {} failed: {}", where, transport_error(res.error()));
  FG_CHECK(res->status == 200, "GET {} failed: {}", where, http_error(res->status, res->body));
  const nlohmann::json j = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  FG_CHECK(j.is_object() && j.contains("data") && j["data"].is_array(), "GET {}: the answer has no \"data\" list",
           where);
  std::vector<ServedModel> models;
  for (const nlohmann::json& m : j["data"]) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) continue;
    models.push_back({m["id"].get<std::string>(), optional_int(m, "vocab_size"), optional_int(m, "max_model_len")});
  }
  return models;
}

nlohmann::json completion_request_body(const std::string& model, const BenchRequest& request) {
  return {{"model", model},
          {"prompt", request.prompt},
          {"max_tokens", request.output_len},
          {"temperature", 0.0},
          {"ignore_eos", true},
          {"stream", true},
          {"stream_options", {{"include_usage", true}}}};
}

RequestResult stream_completion(const ServerConnection& server, const std::string& endpoint, const std::string& model,
                                const BenchRequest& request) {
  const auto prompt_len = static_cast<int64_t>(request.prompt.size());
  httplib::Request req;
  req.method = "POST";
  req.path = server.url.path(endpoint);
  req.headers = auth_headers(server);
  req.headers.emplace("Content-Type", "application/json");
  req.headers.emplace("Accept", "text/event-stream");
  req.body = completion_request_body(model, request).dump();

  std::unique_ptr<httplib::Client> client;
  try {
    client = connect(server);
  } catch (const std::exception& e) {
    StreamRecorder failed(0.0, prompt_len);
    failed.fail(e.what());
    return failed.finish(0.0);
  }
  int status = 0;
  std::string error_body;
  StreamRecorder recorder(monotonic_seconds(), prompt_len);
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const double now = monotonic_seconds();
    if (status == 200) {
      recorder.on_bytes(std::string_view(data, n), now);
    } else if (error_body.size() < kMaxErrorBody) {
      error_body.append(data, std::min(n, kMaxErrorBody - error_body.size()));
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client->send(req, res, error);
  const double ended = monotonic_seconds();
  if (!sent) {
    recorder.fail(fmt::format("POST {}{} failed: {}", server.url.origin, req.path, transport_error(error)));
  } else if (status != 200) {
    recorder.fail(http_error(status, error_body));
  }
  return recorder.finish(ended);
}

}  // namespace fg::bench
