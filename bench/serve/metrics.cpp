// bench/serve/metrics.cpp — counts, token totals, throughputs and latency distributions.
#include "bench/serve/metrics.h"

namespace fg::bench {

LatencySamples collect_latency_samples(std::span<const RequestResult> results) {
  LatencySamples s;
  for (const RequestResult& r : results) {
    if (!r.success) continue;
    s.ttft.push_back(r.ttft);
    s.e2el.push_back(r.latency);
    if (r.output_tokens > 1) s.tpot.push_back((r.latency - r.ttft) / static_cast<double>(r.output_tokens - 1));
    s.itl.insert(s.itl.end(), r.itl.begin(), r.itl.end());
  }
  return s;
}

BenchmarkMetrics compute_metrics(std::span<const RequestResult> results, double duration_s,
                                 std::span<const double> percentiles) {
  BenchmarkMetrics m;
  for (const RequestResult& r : results) {
    if (!r.success) {
      ++m.failed;
      continue;
    }
    ++m.completed;
    m.total_input += r.prompt_len;
    m.total_output += r.output_tokens;
  }
  m.duration = duration_s;
  if (duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / duration_s;
    m.output_throughput = static_cast<double>(m.total_output) / duration_s;
    m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / duration_s;
  }
  const LatencySamples s = collect_latency_samples(results);
  m.ttft_ms = summarize(s.ttft, percentiles, 1000.0);
  m.tpot_ms = summarize(s.tpot, percentiles, 1000.0);
  m.itl_ms = summarize(s.itl, percentiles, 1000.0);
  m.e2el_ms = summarize(s.e2el, percentiles, 1000.0);
  return m;
}

}  // namespace fg::bench
