// tests/test_server_metrics.cpp — the Prometheus text exposition the server's /metrics speaks:
// histogram bucketing ("less than or equal"), cumulative buckets with +Inf equal to the count,
// number and label spelling, and the fullgraph metric set with its vLLM names.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "server/metrics.h"
#include "server/server_metrics.h"

namespace fg::server {
namespace {

TEST(PrometheusText, HistogramBucketsAreCumulativeAndInclusive) {
  Histogram h({0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 1.0, 7.0, std::nan("")}) h.observe(v);
  const HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.counts, (std::vector<uint64_t>{2, 2, 1}));  // 0.1 and 1.0 sit in their own buckets
  EXPECT_EQ(s.count, 5u);                                 // NaN ignored
  EXPECT_DOUBLE_EQ(s.sum, 8.65);
  PrometheusText out(Labels{{"model_name", "m"}});
  out.histogram("x:lat_seconds", "Latency.", s);
  EXPECT_EQ(out.text(),
            "# HELP x:lat_seconds Latency.\n"
            "# TYPE x:lat_seconds histogram\n"
            "x:lat_seconds_bucket{model_name=\"m\",le=\"0.1\"} 2\n"
            "x:lat_seconds_bucket{model_name=\"m\",le=\"1\"} 4\n"
            "x:lat_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 5\n"
            "x:lat_seconds_sum{model_name=\"m\"} 8.65\n"
            "x:lat_seconds_count{model_name=\"m\"} 5\n");
  EXPECT_THROW(Histogram({1.0, 1.0}), Error);
  EXPECT_THROW(Histogram({std::numeric_limits<double>::infinity()}), Error);
}

TEST(PrometheusText, CountersGaugesAndSpelling) {
  PrometheusText out;
  out.counter("a_total", "Help with \\ and\nnewline.", 3);
  out.gauge("b", "B.", 0.25, {{"k", "quote\" back\\ nl\n"}});
  EXPECT_EQ(out.text(),
            "# HELP a_total Help with \\\\ and\\nnewline.\n# TYPE a_total counter\na_total 3\n"
            "# HELP b B.\n# TYPE b gauge\nb{k=\"quote\\\" back\\\\ nl\\n\"} 0.25\n");
  EXPECT_EQ(prometheus_number(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(prometheus_number(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(prometheus_number(std::nan("")), "NaN");
  EXPECT_EQ(prometheus_number(1e21), "1e+21");
  EXPECT_EQ(prometheus_number(123456789), "123456789");
}

TEST(ServerMetrics, NamesWhileLoading) {
  ServerMetrics m;
  m.observe_time_to_first_token(0.003);
  m.observe_finished(0.2, FinishReason::kAbort);
  const std::string text = m.render("tiny", nullptr);
  for (const char* name :
       {"fullgraph:num_requests_running", "fullgraph:num_requests_waiting", "fullgraph:kv_cache_usage_perc",
        "fullgraph:prompt_tokens_total", "fullgraph:generation_tokens_total", "fullgraph:num_preemptions_total",
        "fullgraph:prefix_cache_queries_total", "fullgraph:prefix_cache_hits_total", "fullgraph:graph_steps_total",
        "fullgraph:eager_steps_total", "fullgraph:kv_cache_free_blocks", "fullgraph:kv_cache_usable_blocks",
        "fullgraph:time_to_first_token_seconds_bucket", "fullgraph:inter_token_latency_seconds_count",
        "fullgraph:e2e_request_latency_seconds_sum"})
    EXPECT_NE(text.find(std::string(name) + "{model_name=\"tiny\""), std::string::npos) << name;
  EXPECT_NE(text.find("fullgraph:request_success_total{model_name=\"tiny\",finished_reason=\"abort\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("fullgraph:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.005\"} 1\n"),
            std::string::npos);
  // Every family is announced exactly once.
  EXPECT_EQ(text.find("# TYPE fullgraph:request_success_total counter"),
            text.rfind("# TYPE fullgraph:request_success_total counter"));
}

}  // namespace
}  // namespace fg::server
