// server/api_server.h — the OpenAI-compatible API on top of HttpServer: the routes, the model's
// life cycle (loading → ready, or failed; an engine that dies makes /health 503), and the
// generation endpoints, streamed (SSE) or not (server/generation_exchange.h drives their answers).
//
// Routes: POST /v1/completions, POST /v1/chat/completions (API key when one is set);
// GET /v1/models, GET /health, GET /metrics (public).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/background_worker.h"
#include "server/engine_service.h"
#include "server/logprob_format.h"
#include "server/http_server.h"
#include "server/openai_request.h"
#include "server/server_metrics.h"
#include "tokenizer/chat_template.h"

namespace fg::server {

// The model once built, handed over by whoever built it (cli/serve_command.cpp), which keeps
// owning it until after ApiServer::shutdown().
struct ServedModel {
  Engine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;  // null: token-id prompts only
  ChatTemplateConfig chat;               // an empty template: chat completions are refused
  int64_t vocab_size = 0;
  int64_t max_model_len = 0;
  int64_t block_size = 16;
  int64_t usable_blocks = 0;
  int64_t max_num_seqs = 1;
  SamplingDefaults sampling_defaults;  // for fields a request omits (generation_config.json)
  bool priority_scheduling = false;    // the engine schedules by priority
  int64_t max_logprobs = kMaxLogprobs; // --max-logprobs
  LogprobOptions logprobs;             // --return-tokens-as-token-ids
  GrammarCompiler* grammar = nullptr;  // structured outputs; null: constrained requests are refused
  bool enable_auto_tool_choice = false;                 // --enable-auto-tool-choice
  std::optional<ToolCallFormat> tool_call_parser;       // --tool-call-parser
  std::optional<ReasoningParserKind> reasoning_parser;  // --reasoning-parser
};

struct ApiServerOptions {
  std::vector<std::string> served_model_names;  // non-empty; the first is reported
  int64_t max_queued_requests = 256;            // beyond the engine's max_num_seqs, before 503
  std::function<void(const std::string&)> log;  // one line per noteworthy event
};

class ApiServer {
 public:
  // Registers the routes on `http`, which must outlive this object.
  ApiServer(ApiServerOptions options, HttpServer& http);
  ~ApiServer();

  // The model is built: starts stepping it; /health turns 200.
  void set_ready(ServedModel model);
  // The model could not be built: /health stays 503 with `message`.
  void set_failed(const std::string& message);
  bool failed() const;
  // Why the engine stopped stepping after an error (/health answers 503 with it); nullopt while
  // it runs, or before it is ready.
  std::optional<std::string> engine_error() const;
  // Ends every request in flight ("abort"): for a drain that ran out of time.
  void cancel_all();
  // Stops the engine's thread. Call after the HTTP side has drained.
  void shutdown();

 private:
  struct Ready;

  const Ready* ready() const;
  // The ready model, or an ApiError 503 saying why there is none.
  const Ready& require_ready() const;
  // Handlers (on an I/O thread; none waits: generate() submits and returns).
  void health(HttpExchange& exchange) const;
  void models(HttpExchange& exchange) const;
  void model(HttpExchange& exchange) const;  // GET /v1/models/{id}
  // POST /tokenize and /detokenize, vLLM's.
  void tokenize(HttpExchange& exchange) const;
  void detokenize(HttpExchange& exchange) const;
  void metrics(HttpExchange& exchange) const;
  void generate(Endpoint endpoint, const std::shared_ptr<HttpExchange>& exchange);
  // A parsed request whose constraint (if any) compiled: admitted, submitted and answered.
  void start_generation(Endpoint endpoint, const std::shared_ptr<HttpExchange>& exchange, const ParsedRequest& parsed);

  ApiServerOptions options_;
  int64_t started_at_ = 0;  // Unix seconds, the "created" of /v1/models
  ServerMetrics metrics_;
  std::unique_ptr<Ready> ready_owner_;
  std::atomic<const Ready*> ready_{nullptr};
  // Compiles requests' constraints off the I/O threads. Last: it goes first, with the tasks that
  // read the Ready state.
  BackgroundWorker compiler_;
  mutable std::mutex mutex_;  // failed_
  std::optional<std::string> failed_;
};

}  // namespace fg::server
