// bench/serve/bench_serve.h — `fullgraph bench serve` from parsed options to the report: resolve
// the model and vocabulary from the server, draw the dataset, send one test request, run the
// traffic, then print the table and write the JSON and the plot.
//
// The CLI layer (serve_command.cpp) only maps flags onto BenchServeOptions; everything
// here is callable from tests against an in-process fake server.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bench/serve/metrics.h"
#include "bench/serve/request_result.h"

namespace fg::bench {

struct BenchServeOptions {
  std::string base_url;
  std::string endpoint = "/v1/completions";
  std::string model;    // empty: the first model GET /v1/models lists
  std::string api_key;  // empty: $OPENAI_API_KEY if set (as vLLM's client does)
  std::string dataset = "random";
  int64_t num_prompts = 1000;
  int64_t input_len = 1024, output_len = 128;
  double range_ratio = 0.0;
  int64_t vocab_size = 0;  // 0: from GET /v1/models
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  int64_t max_concurrency = 0;  // 0: no cap
  uint64_t seed = 0;
  std::vector<double> metric_percentiles = {99.0};
  double timeout_s = 6 * 3600;
  bool test_request = true;  // one request first, so a misconfigured run fails before the traffic
  std::string json_path, plot_path;
  bool show_progress = true;
};

struct BenchServeResult {
  std::string model_id;
  int64_t vocab_size = 0;
  std::vector<RequestResult> results;
  BenchmarkMetrics metrics;
  int64_t max_in_flight = 0;
};

// Runs the benchmark and prints the table to `out`. Errors in options and in reaching the server
// throw fg::Error naming the option; failed requests do not (they are counted and reported), but a
// run in which no request completed does, after the report is out.
BenchServeResult run_bench_serve(const BenchServeOptions& options, std::FILE* out = stdout);

// "--request-rate" text: a positive number or "inf".
double parse_request_rate(const std::string& text);

// "--metric-percentiles" text: "99" or "50,90,99".
std::vector<double> parse_percentiles(const std::string& text);

}  // namespace fg::bench
