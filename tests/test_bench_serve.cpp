// tests/test_bench_serve.cpp — `fullgraph bench serve` (bench/serve/): numpy-compatible statistics,
// SSE framing and completion-chunk parsing, stream timing, the arrival schedule, the dataset, the
// metrics and report, and the gnuplot plot (whole runs against a fake server are in
// test_bench_serve_e2e.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "bench/serve/arrival_schedule.h"
#include "bench/serve/base_url.h"
#include "bench/serve/bench_runner.h"
#include "bench/serve/bench_serve.h"
#include "bench/serve/completion_chunk.h"
#include "bench/serve/latency_plot.h"
#include "bench/serve/metrics.h"
#include "bench/serve/openai_client.h"
#include "bench/serve/random_dataset.h"
#include "bench/serve/report.h"
#include "bench/serve/sse_parser.h"
#include "bench/common/stats.h"
#include "bench/serve/stream_recorder.h"
#include "bench/serve/serve_command.h"
#include "bench_test_support.h"
#include "core/error.h"

namespace fg::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using test::expect_error;
using test::is_png;

// ---- statistics: every expected value below is what numpy 2.4 prints for the same call ----

TEST(BenchStats, PercentileMatchesNumpyLinearInterpolation) {
  const std::vector<double> a = {0.5, 0.1, 0.3, 0.9, 0.7};
  EXPECT_DOUBLE_EQ(percentile(a, 99), 0.892);                 // np.percentile(a, 99)
  EXPECT_DOUBLE_EQ(percentile(a, 90), 0.8200000000000001);    // np.percentile(a, 90)
  EXPECT_DOUBLE_EQ(percentile(a, 50), 0.5);
  EXPECT_DOUBLE_EQ(percentile(a, 25), 0.3);
  EXPECT_DOUBLE_EQ(percentile(a, 0), 0.1);
  EXPECT_DOUBLE_EQ(percentile(a, 100), 0.9);
  const std::vector<double> b = {3, 1, 4, 1, 5, 9, 2, 6};
  EXPECT_DOUBLE_EQ(percentile(b, 99), 8.79);                  // 6 + (9 - 6) * 0.93
  EXPECT_DOUBLE_EQ(percentile(b, 99.9), 8.979000000000001);
  EXPECT_DOUBLE_EQ(percentile(b, 75), 5.25);
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{1, 2, 3, 4}, 99), 3.9699999999999998);
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{42}, 99), 42.0);
}

TEST(BenchStats, MeanMedianStdMatchNumpy) {
  const std::vector<double> a = {0.5, 0.1, 0.3, 0.9, 0.7};
  EXPECT_DOUBLE_EQ(median(a), 0.5);
  EXPECT_DOUBLE_EQ(mean(a), 0.5);
  EXPECT_DOUBLE_EQ(stddev(a), 0.28284271247461906);  // np.std: population (ddof=0)
  const std::vector<double> b = {3, 1, 4, 1, 5, 9, 2, 6};
  EXPECT_DOUBLE_EQ(median(b), 3.5);  // even count: mean of the two middle values
  EXPECT_DOUBLE_EQ(mean(b), 3.875);
  EXPECT_DOUBLE_EQ(stddev(b), 2.5708704751503917);
  EXPECT_DOUBLE_EQ(stddev(std::vector<double>{42}), 0.0);
}

TEST(BenchStats, EmptyListsGiveZerosLikeVllm) {
  const std::vector<double> none;
  const std::vector<double> ps = {50, 99};
  const Distribution d = summarize(none, ps, 1000.0);
  EXPECT_EQ(d.mean, 0.0);
  EXPECT_EQ(d.std, 0.0);
  EXPECT_EQ(d.median, 0.0);
  ASSERT_EQ(d.percentiles.size(), 2u);
  EXPECT_EQ(d.percentiles[1].first, 99.0);
  EXPECT_EQ(d.percentiles[1].second, 0.0);
}

TEST(BenchStats, SummarizeScalesAfterComputing) {
  const std::vector<double> a = {0.5, 0.1, 0.3, 0.9, 0.7};
  const std::vector<double> ps = {99};
  const Distribution d = summarize(a, ps, 1000.0);
  EXPECT_DOUBLE_EQ(d.percentiles[0].second, 0.892 * 1000.0);
  EXPECT_DOUBLE_EQ(d.mean, 500.0);
  EXPECT_DOUBLE_EQ(d.median, 500.0);
}

// ---- SSE framing ----

std::vector<std::string> feed_all(SseParser& p, const std::vector<std::string>& reads) {
  std::vector<std::string> out;
  for (const std::string& r : reads)
    for (std::string& e : p.feed(r)) out.push_back(std::move(e));
  return out;
}

TEST(BenchSse, EventsSplitAcrossReadsAtEveryByte) {
  const std::string stream = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
  // Every split point, including inside "data:", inside the JSON and between the two newlines.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser p;
    const auto events = feed_all(p, {stream.substr(0, cut), stream.substr(cut)});
    EXPECT_THAT(events, ElementsAre("{\"a\":1}", "{\"b\":2}", "[DONE]")) << "cut at " << cut;
    EXPECT_TRUE(p.finish().empty());
  }
  SseParser bytewise;
  std::vector<std::string> reads;
  for (char c : stream) reads.emplace_back(1, c);
  EXPECT_THAT(feed_all(bytewise, reads), ElementsAre("{\"a\":1}", "{\"b\":2}", "[DONE]"));
}

TEST(BenchSse, NoEventBeforeItsBlankLine) {
  SseParser p;
  EXPECT_TRUE(p.feed("data: {\"a\":1}\n").empty());
  EXPECT_THAT(p.feed("\n"), ElementsAre("{\"a\":1}"));
}

TEST(BenchSse, CrLfCommentsFieldsAndMultiLineData) {
  SseParser p;
  const auto events =
      feed_all(p, {": keep-alive\r\n\r\n", "event: message\r\nid: 7\r\ndata: line one\r\ndata:line two\r\n\r\n",
                   "retry: 10\n\n", "data:\n\n"});
  // The comment-only and retry-only blocks are no events; an empty data line is one.
  EXPECT_THAT(events, ElementsAre("line one\nline two", ""));
}

TEST(BenchSse, FinishFlushesALastEventWithoutBlankLine) {
  SseParser p;
  EXPECT_TRUE(p.feed("data: [DONE]").empty());
  EXPECT_THAT(p.finish(), ElementsAre("[DONE]"));
  SseParser q;
  EXPECT_TRUE(q.feed("data: x\n").empty());
  EXPECT_THAT(q.finish(), ElementsAre("x"));
}

// ---- completion chunks ----

TEST(BenchChunk, ContentChunk) {
  const auto c = parse_completion_chunk(
      R"({"id":"c","object":"text_completion","choices":[{"index":0,"text":" hi","finish_reason":null}]})");
  EXPECT_TRUE(c.content);
  EXPECT_EQ(c.text, " hi");
  EXPECT_FALSE(c.done);
  EXPECT_FALSE(c.completion_tokens);
  EXPECT_TRUE(c.error.empty());
}

TEST(BenchChunk, EmptyTextTokenStillCountsButBareFinishDoesNot) {
  // A token that ends inside a UTF-8 character streams as empty text: it is still a token.
  EXPECT_TRUE(parse_completion_chunk(R"({"choices":[{"text":"","finish_reason":null}]})").content);
  // The last token with its finish reason is content; an empty terminator after it is not.
  EXPECT_TRUE(parse_completion_chunk(R"({"choices":[{"text":"x","finish_reason":"length"}]})").content);
  const auto bare = parse_completion_chunk(R"({"choices":[{"text":"","finish_reason":"length"}]})");
  EXPECT_FALSE(bare.content);
  EXPECT_TRUE(bare.bare_finish);
}

TEST(BenchChunk, UsageChunk) {
  const auto c = parse_completion_chunk(
      R"({"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})");
  EXPECT_FALSE(c.content);
  ASSERT_TRUE(c.completion_tokens);
  EXPECT_EQ(*c.completion_tokens, 34);
  ASSERT_TRUE(c.prompt_tokens);
  EXPECT_EQ(*c.prompt_tokens, 12);
  // usage: null (sent on every chunk by some servers) is no usage.
  EXPECT_FALSE(parse_completion_chunk(R"({"choices":[{"text":"a"}],"usage":null})").completion_tokens);
}

TEST(BenchChunk, DoneAndErrors) {
  EXPECT_TRUE(parse_completion_chunk("[DONE]").done);
  EXPECT_THAT(parse_completion_chunk(R"({"error":{"message":"out of blocks","type":"server_error"}})").error,
              HasSubstr("out of blocks"));
  EXPECT_THAT(parse_completion_chunk("{not json").error, HasSubstr("not a JSON object"));
}

// ---- one stream, timed ----

std::string content_event(const std::string& text) {
  return "data: " + nlohmann::json{{"choices", {{{"index", 0}, {"text", text}, {"finish_reason", nullptr}}}}}.dump() +
         "\n\n";
}
std::string usage_event(int64_t prompt, int64_t completion) {
  return "data: " +
         nlohmann::json{{"choices", nlohmann::json::array()},
                        {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}}}}
             .dump() +
         "\n\n";
}

TEST(BenchStream, TimesTtftItlAndLatencyFromArrivals) {
  StreamRecorder r(/*sent_at=*/10.0, /*prompt_len=*/5);
  const std::string first = content_event("a");
  r.on_bytes(first.substr(0, 7), 10.1);  // half an event: not a token yet
  r.on_bytes(first.substr(7), 10.25);
  r.on_bytes(content_event("b") + content_event("c"), 10.5);  // two tokens in one read
  r.on_bytes(content_event("d"), 10.75);
  r.on_bytes(usage_event(5, 4) + "data: [DONE]\n\n", 10.8);
  const RequestResult res = r.finish(10.9);
  ASSERT_TRUE(res.success) << res.error;
  EXPECT_DOUBLE_EQ(res.ttft, 0.25);
  EXPECT_THAT(res.itl, ElementsAre(::testing::DoubleEq(0.25), ::testing::DoubleEq(0.0), ::testing::DoubleEq(0.25)));
  EXPECT_DOUBLE_EQ(res.latency, 0.75);  // to the last content chunk, as vLLM
  EXPECT_EQ(res.output_tokens, 4);
  EXPECT_TRUE(res.usage_reported);
  EXPECT_EQ(res.prompt_len, 5);
}

TEST(BenchStream, UsageCountWinsOverChunkCount) {
  StreamRecorder r(0.0, 3);
  r.on_bytes(content_event("ab") + usage_event(3, 7) + "data: [DONE]\n\n", 1.0);
  const RequestResult res = r.finish(1.0);
  ASSERT_TRUE(res.success);
  EXPECT_EQ(res.output_tokens, 7);
}

TEST(BenchStream, WithoutUsageTheChunksAreCounted) {
  StreamRecorder r(0.0, 3);
  r.on_bytes(content_event("a") + content_event("b") + "data: [DONE]\n\n", 1.0);
  const RequestResult res = r.finish(1.0);
  ASSERT_TRUE(res.success);
  EXPECT_EQ(res.output_tokens, 2);
  EXPECT_FALSE(res.usage_reported);
}

TEST(BenchStream, BareFinishIsATokenOnlyWhenNothingCameBefore) {
  const std::string bare = R"(data: {"choices":[{"text":"","finish_reason":"length"}]})" "\n\n";
  StreamRecorder after(0.0, 1);
  after.on_bytes(content_event("a"), 1.0);
  after.on_bytes(bare + usage_event(1, 1) + "data: [DONE]\n\n", 2.0);
  const RequestResult a = after.finish(2.0);
  ASSERT_TRUE(a.success);
  EXPECT_TRUE(a.itl.empty());
  EXPECT_DOUBLE_EQ(a.latency, 1.0);
  // A server that drops empty-text deltas sends only the finish when no token decoded to text.
  StreamRecorder alone(0.0, 1);
  alone.on_bytes(bare + usage_event(1, 4) + "data: [DONE]\n\n", 3.0);
  const RequestResult b = alone.finish(3.0);
  ASSERT_TRUE(b.success) << b.error;
  EXPECT_DOUBLE_EQ(b.ttft, 3.0);
  EXPECT_EQ(b.output_tokens, 4);
}

TEST(BenchStream, NothingAfterDoneIsMeasured) {
  StreamRecorder r(0.0, 1);
  r.on_bytes(content_event("a") + "data: [DONE]\n\n" + content_event("late"), 1.0);
  r.on_bytes(content_event("later"), 2.0);
  const RequestResult res = r.finish(3.0);
  ASSERT_TRUE(res.success);
  EXPECT_TRUE(res.itl.empty());
  EXPECT_DOUBLE_EQ(res.latency, 1.0);
}

TEST(BenchStream, DoneWithoutTrailingBlankLineIsAccepted) {
  StreamRecorder r(0.0, 1);
  r.on_bytes(content_event("a") + "data: [DONE]", 1.0);
  EXPECT_TRUE(r.finish(1.0).success);
}

TEST(BenchStream, FailuresSayWhy) {
  StreamRecorder cut(0.0, 1);
  cut.on_bytes(content_event("a"), 1.0);
  const RequestResult truncated = cut.finish(1.0);
  EXPECT_FALSE(truncated.success);
  EXPECT_THAT(truncated.error, HasSubstr("[DONE]"));
  EXPECT_EQ(truncated.output_tokens, 0);

  StreamRecorder empty(0.0, 1);
  empty.on_bytes("data: [DONE]\n\n", 1.0);
  EXPECT_THAT(empty.finish(1.0).error, HasSubstr("no content chunk"));

  StreamRecorder errored(0.0, 1);
  errored.on_bytes(content_event("a") + R"(data: {"error":{"message":"boom"}})" + "\n\ndata: [DONE]\n\n", 1.0);
  const RequestResult e = errored.finish(1.0);
  EXPECT_FALSE(e.success);
  EXPECT_THAT(e.error, HasSubstr("boom"));
}

// ---- arrivals ----

TEST(BenchSchedule, PoissonMeanRate) {
  const double rate = 5.0;
  const int64_t n = 20000;
  const auto at = arrival_schedule(n, rate, 1.0, /*seed=*/0);
  ASSERT_EQ(at.size(), static_cast<size_t>(n));
  EXPECT_EQ(at.front(), 0.0);
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
  // Exponential gaps: the mean rate's relative standard error is 1/sqrt(n) = 0.7%; allow 5σ.
  const double measured = static_cast<double>(n - 1) / at.back();
  EXPECT_NEAR(measured, rate, rate * 0.035);
  // ...and their coefficient of variation is 1 (a gamma of shape k has 1/sqrt(k)).
  std::vector<double> gaps;
  for (size_t i = 1; i < at.size(); ++i) gaps.push_back(at[i] - at[i - 1]);
  EXPECT_NEAR(stddev(gaps) / mean(gaps), 1.0, 0.05);
}

TEST(BenchSchedule, BurstinessKeepsTheRateAndChangesTheSpread) {
  const auto at = arrival_schedule(20000, 8.0, 4.0, 1);
  std::vector<double> gaps;
  for (size_t i = 1; i < at.size(); ++i) gaps.push_back(at[i] - at[i - 1]);
  EXPECT_NEAR(1.0 / mean(gaps), 8.0, 8.0 * 0.03);
  EXPECT_NEAR(stddev(gaps) / mean(gaps), 0.5, 0.03);
}

TEST(BenchSchedule, SeededAndInfinite) {
  EXPECT_EQ(arrival_schedule(50, 3.0, 1.0, 42), arrival_schedule(50, 3.0, 1.0, 42));
  EXPECT_NE(arrival_schedule(50, 3.0, 1.0, 42), arrival_schedule(50, 3.0, 1.0, 43));
  const auto all_at_once = arrival_schedule(10, std::numeric_limits<double>::infinity(), 1.0, 0);
  EXPECT_TRUE(std::all_of(all_at_once.begin(), all_at_once.end(), [](double t) { return t == 0.0; }));
  expect_error([] { arrival_schedule(3, 0.0, 1.0, 0); }, "--request-rate");
  expect_error([] { arrival_schedule(3, 1.0, 0.0, 0); }, "--burstiness");
}

// ---- dataset ----

TEST(BenchDataset, RandomPromptsHaveTheAskedLengthsAndVocabulary) {
  RandomDatasetSpec spec;
  spec.num_prompts = 200;
  spec.input_len = 100;
  spec.output_len = 20;
  spec.range_ratio = 0.5;
  spec.vocab_size = 37;
  spec.seed = 3;
  const auto reqs = sample_random_requests(spec);
  ASSERT_EQ(reqs.size(), 200u);
  int64_t min_in = 1 << 30, max_in = 0;
  for (const BenchRequest& r : reqs) {
    min_in = std::min<int64_t>(min_in, static_cast<int64_t>(r.prompt.size()));
    max_in = std::max<int64_t>(max_in, static_cast<int64_t>(r.prompt.size()));
    EXPECT_GE(r.output_len, 10);
    EXPECT_LE(r.output_len, 30);
    for (int32_t id : r.prompt) ASSERT_TRUE(id >= 0 && id < 37) << id;
  }
  EXPECT_GE(min_in, 50);
  EXPECT_LE(max_in, 150);
  EXPECT_LT(min_in, 60);  // 200 draws cover the range's ends
  EXPECT_GT(max_in, 140);
  const auto again = sample_random_requests(spec);
  EXPECT_EQ(again[17].prompt, reqs[17].prompt);

  spec.range_ratio = 0.0;
  for (const BenchRequest& r : sample_random_requests(spec)) {
    EXPECT_EQ(r.prompt.size(), 100u);
    EXPECT_EQ(r.output_len, 20);
  }
}

TEST(BenchDataset, ErrorsNameTheOption) {
  RandomDatasetSpec spec;
  spec.vocab_size = 10;
  spec.range_ratio = 1.0;
  expect_error([&] { sample_random_requests(spec); }, "--range-ratio");
  spec.range_ratio = 0.0;
  spec.vocab_size = 0;
  expect_error([&] { sample_random_requests(spec); }, "--vocab-size");
  spec.vocab_size = 10;
  spec.input_len = 0;
  expect_error([&] { sample_random_requests(spec); }, "--input-len");
}

// ---- base URL ----

TEST(BenchBaseUrl, SplitsOriginAndPrefix) {
  const BaseUrl a = parse_base_url("http://127.0.0.1:8000");
  EXPECT_EQ(a.origin, "http://127.0.0.1:8000");
  EXPECT_EQ(a.path("/v1/completions"), "/v1/completions");
  const BaseUrl b = parse_base_url("https://example.com/llm/");
  EXPECT_EQ(b.origin, "https://example.com");
  EXPECT_EQ(b.path("/v1/models"), "/llm/v1/models");
  expect_error([] { parse_base_url("127.0.0.1:8000"); }, "--base-url");
  expect_error([] { parse_base_url("ftp://host"); }, "unsupported scheme");
  expect_error([] { parse_base_url("http:///x"); }, "no host");
}

// ---- metrics and report ----

RequestResult ok_result(int64_t prompt, int64_t out, double ttft, double latency, std::vector<double> itl) {
  RequestResult r;
  r.success = true;
  r.prompt_len = prompt;
  r.output_tokens = out;
  r.usage_reported = true;
  r.ttft = ttft;
  r.latency = latency;
  r.itl = std::move(itl);
  return r;
}

TEST(BenchMetrics, VllmDefinitions) {
  std::vector<RequestResult> results = {ok_result(10, 5, 0.1, 0.5, {0.1, 0.1, 0.1, 0.1}),
                                        ok_result(20, 1, 0.2, 0.2, {}),  // one token: no TPOT sample
                                        ok_result(30, 3, 0.3, 0.7, {0.2, 0.2})};
  RequestResult failed;
  failed.prompt_len = 40;
  failed.error = "HTTP 500: boom";
  results.push_back(failed);
  const std::vector<double> ps = {99};
  const BenchmarkMetrics m = compute_metrics(results, 2.0, ps);
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.total_input, 60);  // failed requests add nothing, as in vLLM
  EXPECT_EQ(m.total_output, 9);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(m.output_throughput, 4.5);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 34.5);
  // TPOT samples: (0.5-0.1)/4 = 0.1 and (0.7-0.3)/2 = 0.2.
  EXPECT_DOUBLE_EQ(m.tpot_ms.mean, 150.0);
  EXPECT_DOUBLE_EQ(m.ttft_ms.median, 200.0);
  EXPECT_DOUBLE_EQ(m.itl_ms.median, 100.0);  // pooled gaps: 0.1 x4, 0.2 x2
  EXPECT_DOUBLE_EQ(m.e2el_ms.percentiles[0].second, (0.5 + (0.7 - 0.5) * 0.98) * 1000.0);
}

TEST(BenchReport, JsonUsesVllmFieldNames) {
  const std::vector<RequestResult> results = {ok_result(10, 5, 0.1, 0.5, {0.1, 0.1, 0.1, 0.1})};
  const std::vector<double> ps = {99, 99.9};
  const BenchmarkMetrics m = compute_metrics(results, 1.0, ps);
  RunInfo info;
  info.request_rate = std::numeric_limits<double>::infinity();
  info.num_prompts = 1;
  const nlohmann::ordered_json j = report_json(info, m, results);
  for (const char* key : {"completed", "failed", "total_input_tokens", "total_output_tokens", "duration",
                          "request_throughput", "output_throughput", "total_token_throughput", "max_concurrency",
                          "request_rate", "burstiness", "num_prompts", "input_lens", "output_lens", "ttfts", "itls",
                          "errors"})
    EXPECT_TRUE(j.contains(key)) << key;
  for (const char* metric : {"ttft", "tpot", "itl", "e2el"})
    for (const char* stat : {"mean", "median", "std", "p99", "p99.9"})
      EXPECT_TRUE(j.contains(fmt::format("{}_{}_ms", stat, metric))) << stat << "_" << metric;
  EXPECT_EQ(j["request_rate"], "inf");
  EXPECT_TRUE(j["max_concurrency"].is_null());
  EXPECT_DOUBLE_EQ(j["mean_ttft_ms"].get<double>(), 100.0);
  EXPECT_EQ(percentile_key(99.0), "p99");
  EXPECT_EQ(percentile_key(99.9), "p99.9");
  const std::string table = format_report_table(info, m);
  EXPECT_THAT(table, HasSubstr("Serving Benchmark Result"));
  EXPECT_THAT(table, HasSubstr("P99 TTFT (ms):"));
  EXPECT_THAT(table, HasSubstr("Mean E2EL (ms):"));
}

TEST(BenchReport, ErrorSummaryCountsDistinctErrors) {
  std::vector<RequestResult> results(5);
  results[0].error = results[2].error = results[3].error = "HTTP 503: busy";
  results[1].error = "timeout";
  results[4] = ok_result(1, 1, 0.1, 0.1, {});
  const auto s = error_summary(results);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], (std::pair<std::string, int64_t>{"HTTP 503: busy", 3}));
  EXPECT_EQ(s[1], (std::pair<std::string, int64_t>{"timeout", 1}));
}

// ---- traffic ----

TEST(BenchTraffic, ConcurrencyCapAndOrder) {
  std::vector<BenchRequest> reqs(12);
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i].prompt.assign(i + 1, 0);
  std::atomic<int> in_flight{0}, peak{0};
  TrafficSpec spec;
  spec.request_rate = std::numeric_limits<double>::infinity();
  spec.max_concurrency = 3;
  const TrafficOutcome out = run_traffic(reqs, spec, [&](const BenchRequest& r) {
    const int now = ++in_flight;
    int seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    --in_flight;
    if (r.prompt.size() == 5) throw Error("thrown by the sender");
    return ok_result(static_cast<int64_t>(r.prompt.size()), 1, 0.01, 0.01, {});
  });
  EXPECT_LE(peak.load(), 3);
  EXPECT_EQ(out.max_in_flight, 3);
  ASSERT_EQ(out.results.size(), 12u);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(out.results[i].prompt_len, static_cast<int64_t>(i + 1));
  EXPECT_FALSE(out.results[4].success);
  EXPECT_THAT(out.results[4].error, HasSubstr("thrown by the sender"));
  EXPECT_GE(out.duration_s, 0.04 - 0.005);  // 12 requests of 10 ms, 3 at a time
}

TEST(BenchTraffic, RateSpacesTheSends) {
  std::vector<BenchRequest> reqs(6, BenchRequest{{1}, 1});
  TrafficSpec spec;
  spec.request_rate = 50.0;
  spec.seed = 5;
  const auto at = arrival_schedule(6, 50.0, 1.0, 5);
  const TrafficOutcome out =
      run_traffic(reqs, spec, [](const BenchRequest&) { return ok_result(1, 1, 0.001, 0.001, {}); });
  EXPECT_GE(out.duration_s, at.back());
}

// ---- plot ----

LatencySamples some_samples() {
  LatencySamples s;
  for (int i = 1; i <= 20; ++i) {
    s.ttft.push_back(0.01 * i);
    s.tpot.push_back(0.002 * i);
    s.itl.push_back(0.001 * (i % 5 + 1));
    s.e2el.push_back(0.05 * i);
  }
  return s;
}

TEST(BenchPlot, ScriptLaysOutOnlySeriesWithSamples) {
  LatencySamples s = some_samples();
  EXPECT_THAT(latency_plot_script(s, "/tmp/d", "/tmp/x.png", "t"), HasSubstr("multiplot layout 2,2"));
  s.tpot.clear();
  s.itl.clear();
  const std::string two = latency_plot_script(s, "/tmp/d", "/tmp/it's.png", "t");
  EXPECT_THAT(two, HasSubstr("multiplot layout 1,2"));
  EXPECT_THAT(two, ::testing::Not(HasSubstr("itl.dat")));
  EXPECT_THAT(two, HasSubstr("'/tmp/it''s.png'"));  // gnuplot's quote escape
}

TEST(BenchPlot, GnuplotWritesAPng) {
  if (find_gnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
  const std::string png = (std::filesystem::temp_directory_path() / fmt::format("fg_plot_{}.png", ::getpid())).string();
  write_latency_plot(some_samples(), png, "test plot");
  EXPECT_TRUE(is_png(png));
  std::filesystem::remove(png);
}

TEST(BenchPlot, MissingGnuplotIsAClearError) {
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", "/nonexistent-fullgraph-test", 1);
  expect_error([] { write_latency_plot(some_samples(), "/tmp/never.png", "t"); }, "gnuplot-nox");
  ::setenv("PATH", saved.c_str(), 1);
}

}  // namespace
}  // namespace fg::bench
