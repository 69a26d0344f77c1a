// server/api_server.cpp — see api_server.h.
#include "server/api_server.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>

#include "server/generation_job.h"
#include "server/sse_stream.h"

namespace fg::server {

namespace {

using namespace std::chrono_literals;

// How often a waiting handler looks whether its client is still there.
constexpr auto kPollInterval = 100ms;

// A streamed response's state, owned by the response's content provider. Whatever ends the
// response — the last event written, a failed write, a client gone — destroying it cancels what
// is still running, which frees its KV blocks.
struct StreamSession {
  std::shared_ptr<GenerationJob> job;
  StreamFormatter format;
  bool started = false;

  StreamSession(std::shared_ptr<GenerationJob> j, StreamFormatter f) : job(std::move(j)), format(std::move(f)) {}
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;
  ~StreamSession() { job->cancel_unfinished(); }

  // One call of the provider: write what arrived, or end the stream. False stops the response.
  bool pump(httplib::DataSink& sink) {
    const auto write = [&sink](const std::string& data) {
      return data.empty() || sink.write(data.data(), data.size());
    };
    if (!started) {
      started = true;
      if (!write(format.begin())) return false;
    }
    // Checked before taking: once finished, every delta is already queued.
    const bool finished = job->finished();
    const std::vector<GenerationJob::Delta> deltas = job->take_deltas(finished ? 0ms : kPollInterval);
    std::string out;
    for (const GenerationJob::Delta& d : deltas) out += format.delta(d.index, d.output);
    if (!write(out)) return false;
    if (finished) {
      if (!write(format.end(job->usage()))) return false;
      sink.done();
      return true;
    }
    return !(deltas.empty() && HttpServer::client_gone());
  }
};

}  // namespace

struct ApiServer::Ready {
  ServedModel model;
  std::unique_ptr<ChatTemplate> chat;
  ModelContext context;
  std::unique_ptr<EngineService> service;
};

ApiServer::ApiServer(ApiServerOptions options, HttpServer& http)
    : options_(std::move(options)), started_at_(static_cast<int64_t>(std::time(nullptr))) {
  FG_CHECK(!options_.served_model_names.empty(), "the server needs a model name");
  if (!options_.log) options_.log = [](const std::string&) {};
  http.get(
      "/health", [this](const auto& req, auto& res) { health(req, res); }, /*is_public=*/true);
  http.get(
      "/v1/models", [this](const auto& req, auto& res) { models(req, res); }, /*is_public=*/true);
  http.get(
      "/metrics", [this](const auto& req, auto& res) { metrics(req, res); }, /*is_public=*/true);
  http.post(
      "/v1/completions", [this](const auto& req, auto& res) { generate(Endpoint::kCompletions, req, res); },
      /*is_public=*/false);
  http.post(
      "/v1/chat/completions", [this](const auto& req, auto& res) { generate(Endpoint::kChatCompletions, req, res); },
      /*is_public=*/false);
}

ApiServer::~ApiServer() { shutdown(); }

void ApiServer::set_ready(ServedModel model) {
  FG_CHECK(model.engine != nullptr, "set_ready: no engine");
  auto r = std::make_unique<Ready>();
  r->model = std::move(model);
  if (!r->model.chat.chat_template.empty()) {
    try {
      r->chat = std::make_unique<ChatTemplate>(r->model.chat);
    } catch (const Error& e) {
      options_.log(fmt::format("the chat template does not parse, chat completions are off: {}", e.what()));
    }
  }
  ModelContext& c = r->context;
  c.served_names = options_.served_model_names;
  c.tokenizer = r->model.tokenizer;
  c.chat_template = r->chat.get();
  c.vocab_size = r->model.vocab_size;
  c.max_model_len = r->model.max_model_len;
  c.block_size = r->model.block_size;
  c.usable_blocks = r->model.usable_blocks;
  r->service = std::make_unique<EngineService>(*r->model.engine);
  ready_owner_ = std::move(r);
  ready_.store(ready_owner_.get(), std::memory_order_release);
}

void ApiServer::set_failed(const std::string& message) {
  std::lock_guard lock(mutex_);
  failed_ = message;
}

bool ApiServer::failed() const {
  std::lock_guard lock(mutex_);
  return failed_.has_value();
}

void ApiServer::cancel_all() {
  if (const Ready* r = ready()) r->service->cancel_all();
}

void ApiServer::shutdown() {
  if (const Ready* r = ready()) r->service->stop();
}

const ApiServer::Ready* ApiServer::ready() const { return ready_.load(std::memory_order_acquire); }

const ApiServer::Ready& ApiServer::require_ready() const {
  const Ready* r = ready();
  if (r == nullptr) {
    std::lock_guard lock(mutex_);
    if (failed_) throw ApiError(503, fmt::format("the model failed to load: {}", *failed_), "", "model_load_failed");
    throw ApiError(503, "the model is loading; retry when /health answers 200", "", "model_loading");
  }
  if (const auto fatal = r->service->fatal_error())
    throw ApiError(503, fmt::format("the engine stopped after an error: {}", *fatal), "", "engine_error");
  return *r;
}

void ApiServer::health(const httplib::Request&, httplib::Response& res) const {
  try {
    require_ready();
    res.status = 200;
  } catch (const ApiError& e) {
    send_error(res, e);
  }
}

void ApiServer::models(const httplib::Request&, httplib::Response& res) const {
  try {
    const Ready& r = require_ready();
    nlohmann::ordered_json data = nlohmann::ordered_json::array();
    for (const std::string& name : options_.served_model_names)
      data.push_back({{"id", name},
                      {"object", "model"},
                      {"created", started_at_},
                      {"owned_by", "fullgraph"},
                      {"max_model_len", r.model.max_model_len},
                      // Beyond OpenAI's fields, for clients that make token-id prompts (`bench serve`).
                      {"vocab_size", r.model.vocab_size}});
    send_json(res, 200, nlohmann::ordered_json{{"object", "list"}, {"data", data}});
  } catch (const ApiError& e) {
    send_error(res, e);
  }
}

void ApiServer::metrics(const httplib::Request&, httplib::Response& res) const {
  const Ready* r = ready();
  res.status = 200;
  res.set_content(metrics_.render(options_.served_model_names.front(), r ? r->service.get() : nullptr),
                  "text/plain; version=0.0.4; charset=utf-8");
}

void ApiServer::generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  try {
    const Ready& r = require_ready();
    const ParsedRequest parsed = parse_openai_request(endpoint, parse_json_body(req.body), r.context);
    EngineService& service = *r.service;
    const int64_t capacity = r.model.max_num_seqs + options_.max_queued_requests;
    if (!service.try_admit(parsed.n, capacity))
      throw ApiError(503,
                     fmt::format("the server holds {} requests, its limit ({} running + {} queued); retry later",
                                 service.held(), r.model.max_num_seqs, options_.max_queued_requests),
                     "", "server_overloaded");
    auto job = std::make_shared<GenerationJob>(service, metrics_, parsed.n, parsed.stream);
    job->submit(parsed);  // releases what it could not submit

    const bool chat = endpoint == Endpoint::kChatCompletions;
    ResponseHeader header{new_response_id(chat ? "chatcmpl-" : "cmpl-"), static_cast<int64_t>(std::time(nullptr)),
                          parsed.model};
    if (parsed.stream) {
      auto session = std::make_shared<StreamSession>(
          job, StreamFormatter(endpoint, header, parsed.n, parsed.top_logprobs, parsed.include_usage, r.model.tokenizer,
                               parsed.prompt.back()));
      res.status = 200;
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider("text/event-stream",
                                       [session](size_t, httplib::DataSink& sink) { return session->pump(sink); });
      return;
    }
    while (!job->wait_finished(kPollInterval)) {
      if (HttpServer::client_gone()) {
        job->cancel_unfinished();  // nobody will read the answer
        HttpServer::close_after_response(res);
        throw ApiError(499, "the client closed the connection");
      }
    }
    const LogprobFormatter format(r.model.tokenizer);
    const std::vector<ChoiceOutput> outputs = job->outputs();
    const bool logprobs = parsed.top_logprobs >= 0;
    send_json(res, 200,
              chat ? chat_response(header, outputs, logprobs, job->usage(), format, parsed.prompt.back())
                   : completion_response(header, outputs, logprobs, job->usage(), format, parsed.prompt.back()));
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (const std::exception& e) {
    // A bug, not the client's fault; say so rather than drop the connection.
    options_.log(fmt::format("internal error serving {}: {}", req.path, e.what()));
    send_error(res, ApiError(500, fmt::format("internal error: {}", e.what())));
  }
}

}  // namespace fg::server
