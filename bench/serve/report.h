// bench/serve/report.h — the results of `bench serve` for people (vLLM's printed table) and for
// tools (vLLM's result JSON: the same field names, so existing plotting and comparison scripts
// read fullgraph's files too).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bench/serve/metrics.h"
#include "bench/serve/request_result.h"

namespace fg::bench {

// What was run, echoed into the report.
struct RunInfo {
  std::string base_url, endpoint, model_id;
  int64_t num_prompts = 0;
  double request_rate = 0.0;  // infinity: all at once
  double burstiness = 1.0;
  int64_t max_concurrency = 0;  // 0: no cap (JSON null, as vLLM's None)
  uint64_t seed = 0;
  int64_t input_len = 0, output_len = 0;
  double range_ratio = 0.0;
};

// "p99", "p99.9": vLLM's key for a percentile (integers lose their ".0").
std::string percentile_key(double p);

// The table, ending in a newline.
std::string format_report_table(const RunInfo& info, const BenchmarkMetrics& m);

// The result JSON: mean_/median_/std_/pNN_ + ttft/tpot/itl/e2el + _ms, the counts, totals and
// throughputs, the run's settings, and the per-request lists (input_lens, output_lens, ttfts, itls,
// errors). Ordered as written (settings, totals, latencies, per-request lists) for people reading it.
nlohmann::ordered_json report_json(const RunInfo& info, const BenchmarkMetrics& m, std::span<const RequestResult> results);

// Distinct error messages of the failed requests with how often each occurred, most frequent first.
std::vector<std::pair<std::string, int64_t>> error_summary(std::span<const RequestResult> results);

}  // namespace fg::bench
