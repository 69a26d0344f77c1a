// server/api_server.cpp — see api_server.h.
#include "server/api_server.h"

#include <fmt/format.h>

#include <ctime>

#include "server/completion_request.h"
#include "server/generation_exchange.h"
#include "server/generation_job.h"
#include "server/model_endpoints.h"
#include "server/sse_stream.h"
#include "server/structured_output_request.h"
#include "server/tokenize_endpoints.h"

namespace fg::server {

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
      "/health", [this](const auto& exchange) { health(*exchange); }, /*is_public=*/true);
  http.get(
      "/v1/models", [this](const auto& exchange) { models(*exchange); }, /*is_public=*/true);
  http.get(
      "/v1/models/*", [this](const auto& exchange) { model(*exchange); }, /*is_public=*/true);
  http.get(
      "/metrics", [this](const auto& exchange) { metrics(*exchange); }, /*is_public=*/true);
  // vLLM serves these without its API key; they run the model's tokenizer, so ours asks for it.
  http.post(
      "/tokenize", [this](const auto& exchange) { tokenize(*exchange); }, /*is_public=*/false);
  http.post(
      "/detokenize", [this](const auto& exchange) { detokenize(*exchange); }, /*is_public=*/false);
  http.post(
      "/v1/completions", [this](const auto& exchange) { generate(Endpoint::kCompletions, exchange); },
      /*is_public=*/false);
  http.post(
      "/v1/chat/completions", [this](const auto& exchange) { generate(Endpoint::kChatCompletions, exchange); },
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
  c.sampling_defaults = r->model.sampling_defaults;
  c.priority_scheduling = r->model.priority_scheduling;
  c.max_logprobs = r->model.max_logprobs;
  c.grammar = r->model.grammar;
  c.enable_auto_tool_choice = r->model.enable_auto_tool_choice;
  c.tool_call_parser = r->model.tool_call_parser;
  c.reasoning_parser = r->model.reasoning_parser;
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

std::optional<std::string> ApiServer::engine_error() const {
  const Ready* r = ready();
  return r ? r->service->fatal_error() : std::nullopt;
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

void ApiServer::health(HttpExchange& exchange) const {
  require_ready();  // an ApiError answers 503
  HttpResponse ok;
  exchange.respond(std::move(ok));
}

void ApiServer::models(HttpExchange& exchange) const {
  exchange.respond(HttpResponse::json(200, model_list(require_ready().context, started_at_)));
}

void ApiServer::model(HttpExchange& exchange) const {
  constexpr std::string_view kPrefix = "/v1/models/";
  const std::string_view id = std::string_view(exchange.request().path).substr(kPrefix.size());
  exchange.respond(HttpResponse::json(200, retrieve_model(require_ready().context, id, started_at_)));
}

void ApiServer::tokenize(HttpExchange& exchange) const {
  const Ready& r = require_ready();
  exchange.respond(HttpResponse::json(200, tokenize_response(parse_json_body(exchange.request().body), r.context)));
}

void ApiServer::detokenize(HttpExchange& exchange) const {
  const Ready& r = require_ready();
  exchange.respond(HttpResponse::json(200, detokenize_response(parse_json_body(exchange.request().body), r.context)));
}

void ApiServer::metrics(HttpExchange& exchange) const {
  const Ready* r = ready();
  HttpResponse res;
  res.content_type = "text/plain; version=0.0.4; charset=utf-8";
  res.body = metrics_.render(options_.served_model_names.front(), r ? r->service.get() : nullptr);
  exchange.respond(std::move(res));
}

// Errors thrown here (ApiError, or anything else as a 500) are answered by the HTTP layer.
void ApiServer::generate(Endpoint endpoint, const std::shared_ptr<HttpExchange>& exchange) {
  const Ready& r = require_ready();
  ParsedRequest parsed =
      parse_openai_request(endpoint, parse_json_body(exchange->request().body), r.context, /*compile=*/false);
  if (!parsed.spec.structured_output) {
    start_generation(endpoint, exchange, parsed);
    return;
  }
  // The constraint compiles on the background worker, off this I/O thread; the exchange's wake
  // brings the request back here (its strand) to be refused or started.
  struct Pending {
    ParsedRequest parsed;
    std::exception_ptr error;
  };
  auto pending = std::make_shared<Pending>(Pending{std::move(parsed), nullptr});
  exchange->on_wake([this, endpoint, exchange, pending] {
    exchange->on_wake(nullptr);
    if (pending->error) std::rethrow_exception(pending->error);
    start_generation(endpoint, exchange, pending->parsed);
  });
  compiler_.post([&r, exchange, pending] {
    try {
      check_structured_output(pending->parsed.spec, r.context);
    } catch (...) {
      pending->error = std::current_exception();
    }
    exchange->wake();
  });
}

void ApiServer::start_generation(Endpoint endpoint, const std::shared_ptr<HttpExchange>& exchange,
                                 const ParsedRequest& parsed) {
  const Ready& r = require_ready();
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
  const ResponseHeader header{response_id(parsed, exchange->request().header("X-Request-Id").value_or("")),
                              static_cast<int64_t>(std::time(nullptr)), parsed.model};
  if (parsed.stream) {
    stream_generation(exchange, std::move(job), StreamFormatter(header, parsed, LogprobFormatter(r.model.tokenizer, r.model.logprobs)));
    return;
  }
  answer_generation(exchange, job, [job, chat, header, parsed, format = LogprobFormatter(r.model.tokenizer, r.model.logprobs)] {
    std::vector<ChoiceOutput> outputs = job->outputs();
    prepend_echo(outputs, parsed);
    const bool logprobs = parsed.top_logprobs >= 0;
    const PromptReport prompt{parsed.prompt, parsed.echo && logprobs, parsed.spec.prompt_logprobs >= 0};
    return chat ? chat_response(header, outputs, logprobs, job->usage(), format, prompt, parsed.chat_output)
                : completion_response(header, outputs, logprobs, job->usage(), format, prompt);
  });
}

}  // namespace fg::server
