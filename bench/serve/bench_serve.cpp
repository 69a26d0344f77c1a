// bench/serve/bench_serve.cpp — the `bench serve` pipeline.
#include "bench/serve/bench_serve.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "bench/common/number_list.h"
#include "bench/serve/base_url.h"
#include "bench/serve/bench_runner.h"
#include "bench/serve/latency_plot.h"
#include "bench/serve/openai_client.h"
#include "bench/serve/random_dataset.h"
#include "bench/serve/report.h"
#include "core/error.h"

namespace fg::bench {

namespace {

void validate(const BenchServeOptions& o) {
  FG_CHECK(o.dataset == "random", "--dataset '{}' is not supported (only: random)", o.dataset);
  // The body carries a token-id prompt, which the chat endpoint has no field for.
  FG_CHECK(o.endpoint.ends_with("completions") && !o.endpoint.ends_with("chat/completions"),
           "--endpoint '{}' must be a completions endpoint such as /v1/completions", o.endpoint);
  FG_CHECK(o.num_prompts >= 1, "--num-prompts must be at least 1, got {}", o.num_prompts);
  FG_CHECK(o.max_concurrency >= 0, "--max-concurrency must be positive, got {}", o.max_concurrency);
  FG_CHECK(o.request_rate > 0.0, "--request-rate must be positive or inf, got {}", o.request_rate);
  FG_CHECK(o.vocab_size >= 0, "--vocab-size must be positive, got {}", o.vocab_size);
  FG_CHECK(o.timeout_s > 0.0, "--timeout must be positive, got {}", o.timeout_s);
  for (double p : o.metric_percentiles)
    FG_CHECK(p >= 0.0 && p <= 100.0, "--metric-percentiles: {} is outside [0, 100]", p);
}

// The model to name in requests and the vocabulary to draw prompt tokens from. --model and
// --vocab-size win; what they leave open comes from GET /v1/models.
struct ServedTarget {
  std::string model;
  int64_t vocab_size = 0;
  std::optional<int64_t> max_model_len;
};

ServedTarget resolve_target(const BenchServeOptions& o, const ServerConnection& server) {
  ServedTarget t{o.model, o.vocab_size, std::nullopt};
  std::vector<ServedModel> models;
  std::string models_error;
  try {
    models = fetch_models(server);
  } catch (const Error& e) {
    models_error = e.what();
  }
  const ServedModel* served = nullptr;
  for (const ServedModel& m : models)
    if (o.model.empty() || m.id == o.model) {
      served = &m;
      break;
    }
  if (t.model.empty()) {
    FG_CHECK(served != nullptr, "--model was not given and the server lists no model{}",
             models_error.empty() ? "" : " (" + models_error + ")");
    t.model = served->id;
  }
  if (served) t.max_model_len = served->max_model_len;
  if (t.vocab_size == 0) {
    FG_CHECK(served && served->vocab_size, "--vocab-size is needed: GET /v1/models {} (random prompts draw token ids "
             "uniformly from [0, vocab size))",
             !models_error.empty() ? "failed: " + models_error
                                   : fmt::format("reports no vocab_size for model '{}'", t.model));
    t.vocab_size = *served->vocab_size;
  }
  return t;
}

RunInfo run_info(const BenchServeOptions& o, const std::string& model) {
  RunInfo info;
  info.base_url = o.base_url;
  info.endpoint = o.endpoint;
  info.model_id = model;
  info.num_prompts = o.num_prompts;
  info.request_rate = o.request_rate;
  info.burstiness = o.burstiness;
  info.max_concurrency = o.max_concurrency;
  info.seed = o.seed;
  info.input_len = o.input_len;
  info.output_len = o.output_len;
  info.range_ratio = o.range_ratio;
  return info;
}

}  // namespace

double parse_request_rate(const std::string& text) {
  if (text == "inf" || text == "infinity") return std::numeric_limits<double>::infinity();
  size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  FG_CHECK(used == text.size() && !text.empty() && v > 0.0, "--request-rate '{}' is not a positive number or inf", text);
  return v;
}

std::vector<double> parse_percentiles(const std::string& text) {
  return parse_number_list(text, "--metric-percentiles", "a number in [0, 100]",
                           [](double p) { return p >= 0.0 && p <= 100.0; });
}

BenchServeResult run_bench_serve(const BenchServeOptions& o, std::FILE* out) {
  validate(o);
  ServerConnection server;
  server.url = parse_base_url(o.base_url);
  server.api_key = o.api_key;
  if (server.api_key.empty())
    if (const char* env = std::getenv("OPENAI_API_KEY")) server.api_key = env;
  server.timeout_s = o.timeout_s;

  const ServedTarget target = resolve_target(o, server);
  RandomDatasetSpec spec;
  spec.num_prompts = o.num_prompts;
  spec.input_len = o.input_len;
  spec.output_len = o.output_len;
  spec.range_ratio = o.range_ratio;
  spec.vocab_size = target.vocab_size;
  spec.seed = o.seed;
  const std::vector<BenchRequest> requests = sample_random_requests(spec);
  if (target.max_model_len) {
    const int64_t longest = length_range(o.input_len, o.range_ratio).hi + length_range(o.output_len, o.range_ratio).hi;
    FG_CHECK(longest <= *target.max_model_len,
             "--input-len + --output-len reach {} tokens, beyond the server's max_model_len {} for '{}'", longest,
             *target.max_model_len, target.model);
  }

  auto send = [&](const BenchRequest& r) { return stream_completion(server, o.endpoint, target.model, r); };
  if (o.test_request) {
    const RequestResult test = send(requests.front());
    FG_CHECK(test.success, "the test request to {}{} failed, so the benchmark was not started: {}",
             server.url.origin, server.url.path(o.endpoint), test.error);
  }
  fmt::print(stderr, "bench serve: {} prompts ({} in / {} out, range ratio {}), model '{}', rate {}, concurrency {}\n",
             o.num_prompts, o.input_len, o.output_len, o.range_ratio, target.model,
             std::isinf(o.request_rate) ? std::string("inf") : fmt::format("{}", o.request_rate),
             o.max_concurrency > 0 ? fmt::format("{}", o.max_concurrency) : std::string("unlimited"));

  TrafficSpec traffic;
  traffic.request_rate = o.request_rate;
  traffic.burstiness = o.burstiness;
  traffic.max_concurrency = o.max_concurrency;
  traffic.seed = o.seed;
  traffic.show_progress = o.show_progress;
  TrafficOutcome outcome = run_traffic(requests, traffic, send);

  BenchServeResult result;
  result.model_id = target.model;
  result.vocab_size = target.vocab_size;
  result.max_in_flight = outcome.max_in_flight;
  result.metrics = compute_metrics(outcome.results, outcome.duration_s, o.metric_percentiles);
  const RunInfo info = run_info(o, target.model);
  fmt::print(out, "{}", format_report_table(info, result.metrics));
  std::fflush(out);
  const auto errors = error_summary(outcome.results);
  for (size_t i = 0; i < errors.size() && i < 10; ++i)
    fmt::print(stderr, "bench serve: {} request(s) failed: {}\n", errors[i].second, errors[i].first);
  int64_t without_usage = 0;
  for (const RequestResult& r : outcome.results) without_usage += r.success && !r.usage_reported;
  if (without_usage > 0)
    fmt::print(stderr, "bench serve: warning: {} response(s) had no usage chunk; their output tokens are the number "
               "of content chunks\n", without_usage);

  if (!o.json_path.empty()) {
    std::ofstream json(o.json_path);
    json << report_json(info, result.metrics, outcome.results).dump(2) << "\n";
    FG_CHECK(json.good(), "--json: cannot write {}", o.json_path);
  }
  result.results = std::move(outcome.results);
  if (!o.plot_path.empty()) {
    const std::string title = fmt::format("fullgraph bench serve: {}, {} prompts, {} in / {} out, rate {}, concurrency {}",
                                          target.model, o.num_prompts, o.input_len, o.output_len,
                                          std::isinf(o.request_rate) ? std::string("inf") : fmt::format("{}", o.request_rate),
                                          o.max_concurrency > 0 ? fmt::format("{}", o.max_concurrency) : std::string("-"));
    if (result.metrics.completed > 0) write_latency_plot(collect_latency_samples(result.results), o.plot_path, title);
  }
  FG_CHECK(result.metrics.completed > 0, "no request completed; the most frequent error: {}",
           errors.empty() ? std::string("(none)") : errors.front().first);
  return result;
}

}  // namespace fg::bench
