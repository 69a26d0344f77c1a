// bench/serve/report.cpp — the printed table and the result JSON.
#include "bench/serve/report.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

namespace fg::bench {

namespace {

struct MetricName {
  const char* key;      // in JSON field names
  const char* label;    // in the table rows
  const char* heading;  // the table's section title
  const Distribution BenchmarkMetrics::*dist;
};

constexpr MetricName kMetrics[] = {
    {"ttft", "TTFT", "Time to First Token", &BenchmarkMetrics::ttft_ms},
    {"tpot", "TPOT", "Time per Output Token (excl. 1st token)", &BenchmarkMetrics::tpot_ms},
    {"itl", "ITL", "Inter-token Latency", &BenchmarkMetrics::itl_ms},
    {"e2el", "E2EL", "End-to-end Latency", &BenchmarkMetrics::e2el_ms},
};

std::string centered(const std::string& title, char fill) {
  const size_t width = 50;
  if (title.size() >= width) return title;
  const size_t left = (width - title.size()) / 2;
  return std::string(left, fill) + title + std::string(width - title.size() - left, fill);
}

}  // namespace

std::string percentile_key(double p) {
  return p == std::floor(p) ? fmt::format("p{}", static_cast<int64_t>(p)) : fmt::format("p{}", p);
}

std::string format_report_table(const RunInfo& info, const BenchmarkMetrics& m) {
  std::string out;
  auto row = [&](const std::string& label, const std::string& value) {
    out += fmt::format("{:<40} {:<10}\n", label, value);
  };
  auto num = [](double v) { return fmt::format("{:.2f}", v); };
  out += centered(" Serving Benchmark Result ", '=') + "\n";
  row("Successful requests:", fmt::format("{}", m.completed));
  row("Failed requests:", fmt::format("{}", m.failed));
  row("Maximum request concurrency:", info.max_concurrency > 0 ? fmt::format("{}", info.max_concurrency) : "None");
  row("Request rate configured (RPS):", std::isinf(info.request_rate) ? "inf" : num(info.request_rate));
  row("Benchmark duration (s):", num(m.duration));
  row("Total input tokens:", fmt::format("{}", m.total_input));
  row("Total generated tokens:", fmt::format("{}", m.total_output));
  row("Request throughput (req/s):", num(m.request_throughput));
  row("Output token throughput (tok/s):", num(m.output_throughput));
  row("Total Token throughput (tok/s):", num(m.total_token_throughput));
  for (const MetricName& metric : kMetrics) {
    const Distribution& d = m.*metric.dist;
    out += centered(metric.heading, '-') + "\n";
    row(fmt::format("Mean {} (ms):", metric.label), num(d.mean));
    row(fmt::format("Median {} (ms):", metric.label), num(d.median));
    row(fmt::format("Std {} (ms):", metric.label), num(d.std));
    for (const auto& [p, v] : d.percentiles)
      row(fmt::format("P{} {} (ms):", percentile_key(p).substr(1), metric.label), num(v));
  }
  out += std::string(50, '=') + "\n";
  return out;
}

nlohmann::ordered_json report_json(const RunInfo& info, const BenchmarkMetrics& m,
                                   std::span<const RequestResult> results) {
  using json = nlohmann::ordered_json;
  const std::time_t now = std::time(nullptr);
  json j;
  j["date"] = fmt::format("{:%Y%m%d-%H%M%S}", fmt::localtime(now));
  j["backend"] = "openai";
  j["base_url"] = info.base_url;
  j["endpoint"] = info.endpoint;
  j["model_id"] = info.model_id;
  j["dataset_name"] = "random";
  j["random_input_len"] = info.input_len;
  j["random_output_len"] = info.output_len;
  j["random_range_ratio"] = info.range_ratio;
  j["seed"] = info.seed;
  j["num_prompts"] = info.num_prompts;
  // vLLM writes the string "inf" for an unlimited rate (JSON has no infinity).
  j["request_rate"] = std::isinf(info.request_rate) ? json("inf") : json(info.request_rate);
  j["burstiness"] = info.burstiness;
  j["max_concurrency"] = info.max_concurrency > 0 ? json(info.max_concurrency) : json(nullptr);
  j["duration"] = m.duration;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["total_input_tokens"] = m.total_input;
  j["total_output_tokens"] = m.total_output;
  j["request_throughput"] = m.request_throughput;
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  for (const MetricName& metric : kMetrics) {
    const Distribution& d = m.*metric.dist;
    j[fmt::format("mean_{}_ms", metric.key)] = d.mean;
    j[fmt::format("median_{}_ms", metric.key)] = d.median;
    j[fmt::format("std_{}_ms", metric.key)] = d.std;
    for (const auto& [p, v] : d.percentiles) j[fmt::format("{}_{}_ms", percentile_key(p), metric.key)] = v;
  }
  json input_lens = json::array(), output_lens = json::array(), ttfts = json::array(), itls = json::array(),
       errors = json::array();
  for (const RequestResult& r : results) {
    input_lens.push_back(r.prompt_len);
    output_lens.push_back(r.success ? r.output_tokens : 0);
    ttfts.push_back(r.ttft);
    itls.push_back(r.itl);
    errors.push_back(r.error);
  }
  j["input_lens"] = std::move(input_lens);
  j["output_lens"] = std::move(output_lens);
  j["ttfts"] = std::move(ttfts);
  j["itls"] = std::move(itls);
  j["errors"] = std::move(errors);
  return j;
}

std::vector<std::pair<std::string, int64_t>> error_summary(std::span<const RequestResult> results) {
  std::vector<std::pair<std::string, int64_t>> out;
  std::map<std::string, size_t> index;
  for (const RequestResult& r : results) {
    if (r.success) continue;
    const auto [it, fresh] = index.emplace(r.error, out.size());
    if (fresh) out.emplace_back(r.error, 0);
    ++out[it->second].second;
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace fg::bench
