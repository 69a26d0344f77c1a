// bench/serve/serve_command.cpp — the flags of `bench serve`, mapped onto BenchServeOptions.
//
// Flag names follow `vllm bench serve` where it has them; vLLM's longer dataset-specific spellings
// (--dataset-name, --random-input-len, ...) are accepted as aliases so its command lines carry over.
#include "bench/serve/serve_command.h"

#include <memory>

#include "bench/serve/bench_serve.h"

namespace fg::bench {

namespace {

struct Flags {
  BenchServeOptions options;
  std::string request_rate = "inf";
  std::string percentiles = "99";
  bool no_test_request = false, no_progress = false;
};

}  // namespace

void add_serve_command(CLI::App& bench) {
  auto f = std::make_shared<Flags>();
  BenchServeOptions& o = f->options;
  CLI::App* cmd = bench.add_subcommand(
      "serve", "Load-test an OpenAI-compatible server: TTFT, TPOT, ITL and end-to-end latency, as `vllm bench serve`");
  cmd->add_option("--base-url", o.base_url, "The server, e.g. http://127.0.0.1:8000")->required();
  cmd->add_option("--endpoint", o.endpoint, "The completions endpoint")->capture_default_str();
  cmd->add_option("--model", o.model, "Model name in the requests (default: the first one GET /v1/models lists)");
  cmd->add_option("--api-key", o.api_key, "Bearer token (default: $OPENAI_API_KEY)");
  cmd->add_option("--dataset,--dataset-name", o.dataset, "Prompt source: random")->capture_default_str();
  cmd->add_option("--num-prompts", o.num_prompts, "Requests to send")->capture_default_str();
  cmd->add_option("--input-len,--random-input-len", o.input_len, "Prompt tokens per request")->capture_default_str();
  cmd->add_option("--output-len,--random-output-len", o.output_len, "Generated tokens per request (ignore_eos)")
      ->capture_default_str();
  cmd->add_option("--range-ratio,--random-range-ratio", o.range_ratio,
                  "Lengths uniform in [N(1-r), N(1+r)], r in [0, 1)")
      ->capture_default_str();
  cmd->add_option("--vocab-size", o.vocab_size,
                  "Prompt token ids are uniform in [0, this) (default: vocab_size from GET /v1/models)");
  cmd->add_option("--request-rate", f->request_rate, "Requests per second, Poisson arrivals; inf sends all at once")
      ->capture_default_str();
  cmd->add_option("--burstiness", o.burstiness, "Gamma shape of the arrival gaps (1 = Poisson; < 1 burstier)")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o.max_concurrency, "At most this many requests in flight (default: no cap)");
  cmd->add_option("--seed", o.seed, "Seeds the prompts, lengths and arrival times")->capture_default_str();
  cmd->add_option("--metric-percentiles", f->percentiles, "Percentiles to report, e.g. 50,90,99")
      ->capture_default_str();
  cmd->add_option("--timeout", o.timeout_s, "Seconds a request may wait for its next bytes")->capture_default_str();
  cmd->add_option("--json", o.json_path, "Also write the results as JSON (vLLM's field names)");
  cmd->add_option("--plot", o.plot_path, "Also draw the latency CDFs into this PNG (needs gnuplot)");
  cmd->add_flag("--no-test-request", f->no_test_request, "Skip the single request sent before the traffic");
  cmd->add_flag("--no-progress", f->no_progress, "No progress line on stderr");
  cmd->callback([f] {
    BenchServeOptions options = f->options;
    options.request_rate = parse_request_rate(f->request_rate);
    options.metric_percentiles = parse_percentiles(f->percentiles);
    options.test_request = !f->no_test_request;
    options.show_progress = !f->no_progress;
    run_bench_serve(options);
  });
}

}  // namespace fg::bench
