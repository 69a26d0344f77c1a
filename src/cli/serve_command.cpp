// cli/serve_command.cpp — `fullgraph serve`: listens first, builds the model in the background
// (/health answers 503 until it is ready), then serves until SIGTERM or SIGINT, on which it
// stops accepting, lets the requests in flight finish (up to --drain-timeout, after which they
// are aborted), and exits 0. A second signal during the drain aborts at once. A model that fails
// to load ends the process with status 1; so does, under --tensor-parallel-size, an engine that
// stopped after an error (a rank failed: the ranks are out of step for good), once /health has
// answered 503 and the requests in flight have failed.
//
// Signals are blocked in every thread (each inherits the mask of the thread that made it) and
// taken synchronously here with sigtimedwait, so no handler runs in the middle of anything.
#include "cli/serve_command.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/default_model.h"
#include "cli/engine_setup.h"
#include "cli/http_flags.h"
#include "cli/serve_flags.h"
#include "cli/stats_logger.h"
#include "core/log.h"
#include "server/api_server.h"
#include "server/http_server.h"

namespace fg::cli {

namespace {

struct ServeOptions {
  EngineSetupOptions engine;
  server::HttpServerOptions http;
  std::vector<std::string> served_model_names;
  int64_t max_queued_requests = 256;
  double max_body_mib = 4.0;
  double drain_timeout_s = 30.0;
  // vLLM's serve flags (serve_flags.h); the engine's chat/tokenizer/dtype options are in `engine`.
  ServeFlags vllm;
};

void log_line(const std::string& line) { log::info("{}", line); }

// After apply_default_model: the default model is named as if it had been given as --model.
std::string default_model_name(const EngineSetupOptions& o) {
  if (!o.model_dir.empty()) return o.model_dir;  // what vLLM reports too: the --model argument
  if (!o.shape.empty()) return o.shape;
  return "fullgraph-builtin";
}

server::ServedModel served_model(const EngineSetup& s, const ServeOptions& o) {
  server::ServedModel m;
  m.engine = s.engine.get();
  m.tokenizer = s.tokenizer.get();
  m.chat = s.chat;
  m.vocab_size = s.config.vocab_size;
  m.max_model_len = s.max_model_len;
  m.max_num_seqs = s.max_num_seqs;
  m.block_size = s.blocks->block_size();
  m.usable_blocks = s.blocks->num_usable_blocks();
  m.sampling_defaults = s.generation.sampling;
  m.priority_scheduling = o.engine.scheduling_policy == "priority";
  m.max_logprobs = o.vllm.max_logprobs;
  m.logprobs.return_tokens_as_token_ids = o.vllm.return_tokens_as_token_ids;
  m.grammar = s.grammar.get();
  m.enable_auto_tool_choice = o.vllm.enable_auto_tool_choice;
  m.tool_call_parser = o.vllm.tool_call_parser;
  m.reasoning_parser = o.vllm.reasoning_parser;
  return m;
}

// Waits up to `timeout` for SIGINT or SIGTERM; returns it, or 0.
int wait_signal(const sigset_t& signals, std::chrono::milliseconds timeout) {
  const timespec t{static_cast<time_t>(timeout.count() / 1000), static_cast<long>(timeout.count() % 1000) * 1'000'000};
  const int sig = sigtimedwait(&signals, nullptr, &t);
  return sig > 0 ? sig : 0;
}

void run_serve(const ServeOptions& o, const GpuBackendFactory& gpu) {
  FG_CHECK(o.max_queued_requests >= 0, "--max-queued-requests must not be negative");
  FG_CHECK(o.max_body_mib > 0 && o.max_body_mib <= 1024, "--max-request-mib must be in (0, 1024]");
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  ::signal(SIGPIPE, SIG_IGN);  // writes to a closed client are errors, not deaths

  server::HttpServerOptions http_options = o.http;
  http_options.max_body_bytes = static_cast<size_t>(o.max_body_mib * (1 << 20));
  server::ApiServerOptions api_options;
  api_options.served_model_names = o.served_model_names;
  if (api_options.served_model_names.empty()) api_options.served_model_names.push_back(default_model_name(o.engine));
  api_options.max_queued_requests = o.max_queued_requests;
  api_options.log = log_line;

  std::unique_ptr<EngineSetup> setup;  // outlives the server, which steps its engine
  std::unique_ptr<EngineStatsLogger> stats_logger;  // reads setup's engine; reset before it goes
  server::HttpServer http(http_options);
  server::ApiServer api(api_options, http);
  http.bind();  // before loading: a taken port fails at once
  log_line(fmt::format("listening on {}://{}:{} as '{}'; loading the model",
                       http_options.ssl_certfile.empty() ? "http" : "https", http_options.host, http.port(),
                       api_options.served_model_names.front()));

  std::atomic<bool> listening_done{false};
  std::thread listener([&] {
    http.run();
    listening_done = true;
  });
  std::thread loader([&] {
    try {
      setup = build_engine(o.engine, gpu, log_line);
      api.set_ready(served_model(*setup, o));
      log_line(fmt::format("ready: {} on {}", setup->source, o.engine.device));
      if (!o.vllm.disable_log_stats)
        stats_logger = std::make_unique<EngineStatsLogger>(
            *setup->engine, std::chrono::duration<double>(o.vllm.log_stats_interval_s));
    } catch (const std::exception& e) {
      log_line(fmt::format("error: the model failed to load: {}", e.what()));
      api.set_failed(e.what());
    }
  });

  bool load_failed = false;
  bool engine_failed = false;
  while (true) {
    if (const int sig = wait_signal(signals, std::chrono::milliseconds(200))) {
      log_line(fmt::format("{}: draining (up to {} s)", sig == SIGTERM ? "SIGTERM" : "SIGINT", o.drain_timeout_s));
      break;
    }
    if (api.failed()) {
      load_failed = true;
      break;
    }
    if (o.engine.tensor_parallel_size > 1) {
      if (const std::optional<std::string> error = api.engine_error()) {
        log_line(fmt::format("error: tensor-parallel engine stopped: {}; exiting", *error));
        engine_failed = true;
        break;
      }
    }
  }
  http.drain();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.drain_timeout_s);
  bool aborting = false;
  while (!listening_done) {
    const int sig = wait_signal(signals, std::chrono::milliseconds(100));
    if (!aborting && (sig != 0 || std::chrono::steady_clock::now() > deadline)) {
      log_line(sig != 0 ? "second signal: aborting the requests in flight"
                        : "drain timeout: aborting the requests in flight");
      aborting = true;
    }
    // Repeated: a request that was being submitted when the drain began may start after a cancel.
    if (aborting) api.cancel_all();
  }
  listener.join();
  loader.join();  // a load in progress cannot be interrupted; it finishes first
  stats_logger.reset();
  api.shutdown();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  FG_CHECK(!load_failed, "the model failed to load (see above)");
  FG_CHECK(!engine_failed, "the tensor-parallel engine stopped after a rank failed (see above)");
  log_line("drained; exiting");
}

}  // namespace

void add_serve_command(CLI::App& app, GpuBackendFactory gpu) {
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions), as "
               "`vllm serve MODEL` does");
  auto o = std::make_shared<ServeOptions>();
  add_engine_options(*cmd, o->engine);
  add_serve_flags(*cmd, o->vllm);
  server::HttpServerOptions& h = o->http;
  cmd->add_option("--host", h.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", h.port, "Port to listen on (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--served-model-name", o->served_model_names,
                  "Model name(s) requests may give; the first is reported (default: the model as given)");
  cmd->add_option("--api-key", h.api_key,
                  "Require 'Authorization: Bearer KEY' on the generation endpoints (/health, /v1/models and "
                  "/metrics stay public)")
      ->envname("FULLGRAPH_API_KEY");
  cmd->add_option("--max-queued-requests", o->max_queued_requests,
                  "Requests that may wait beyond --max-num-seqs; more get 503")
      ->capture_default_str();
  cmd->add_option("--max-request-mib", o->max_body_mib, "Largest request body, in MiB (larger: 413)")
      ->capture_default_str();
  add_http_flags(*cmd, h);
  cmd->add_option("--drain-timeout", o->drain_timeout_s,
                  "On SIGTERM/SIGINT: seconds the requests in flight may take to finish before they are aborted")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  cmd->callback([o, gpu] {
    apply_serve_flags(o->vllm, o->engine);
    apply_default_model(o->engine);
    run_serve(*o, gpu);
  });
}

}  // namespace fg::cli
