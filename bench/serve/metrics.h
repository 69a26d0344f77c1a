// bench/serve/metrics.h — the benchmark's aggregate numbers from the per-request results, with
// the definitions of vLLM's calculate_metrics, so reports from both tools mean the same thing:
//   TTFT  send → first content chunk, one sample per completed request;
//   TPOT  (latency − TTFT) / (output tokens − 1), for completed requests with > 1 output token;
//   ITL   every gap between successive content chunks, pooled over all completed requests;
//   E2EL  send → last content chunk;
//   throughputs divide by the benchmark's wall duration; failed requests add no tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bench/common/stats.h"
#include "bench/serve/request_result.h"

namespace fg::bench {

// The raw samples behind the distributions, in seconds (also what --plot draws).
struct LatencySamples {
  std::vector<double> ttft, tpot, itl, e2el;
};

struct BenchmarkMetrics {
  int64_t completed = 0, failed = 0;
  int64_t total_input = 0, total_output = 0;
  double duration = 0.0;  // seconds
  double request_throughput = 0.0, output_throughput = 0.0, total_token_throughput = 0.0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms;
};

LatencySamples collect_latency_samples(std::span<const RequestResult> results);

// `percentiles`: the p values reported besides mean/median/std (vLLM's --metric-percentiles).
BenchmarkMetrics compute_metrics(std::span<const RequestResult> results, double duration_s,
                                 std::span<const double> percentiles);

}  // namespace fg::bench
