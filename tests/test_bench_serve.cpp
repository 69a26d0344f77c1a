// tests/test_bench_serve.cpp — `fullgraph bench serve` (bench_client/): numpy-compatible statistics,
// SSE framing and completion-chunk parsing, stream timing, the arrival schedule, the dataset, the
// metrics and report, the gnuplot plot, and whole runs against a fake OpenAI server started
// in-process with cpp-httplib on a free loopback port.
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

#include "bench_client/arrival_schedule.h"
#include "bench_client/base_url.h"
#include "bench_client/bench_runner.h"
#include "bench_client/bench_serve.h"
#include "bench_client/completion_chunk.h"
#include "bench_client/latency_plot.h"
#include "bench_client/metrics.h"
#include "bench_client/openai_client.h"
#include "bench_client/random_dataset.h"
#include "bench_client/report.h"
#include "bench_client/sse_parser.h"
#include "bench_client/stats.h"
#include "bench_client/stream_recorder.h"
#include "cli/bench_serve_command.h"
#include "core/error.h"

namespace fg::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Expects `fn` to throw fg::Error whose message contains `needle`.
template <typename Fn>
void expect_error(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(needle));
  }
}

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

bool is_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in.good() && std::string(magic, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
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

// ---- end to end against a fake OpenAI server ----

// Streams `max_tokens` content chunks with small sleeps (a prefill pause, then a decode pause per
// token), a usage chunk and [DONE], like an OpenAI-compatible server would. It checks each request
// body and records how many requests were in flight at once.
class FakeOpenAiServer {
 public:
  struct Config {
    int64_t vocab_size = 1000;
    bool report_vocab = true;
    int fail_every = 0;  // > 0: every fail_every-th request (counting from 1) gets an HTTP 500
    int prefill_ms = 4, decode_ms = 2;
  };

  explicit FakeOpenAiServer(Config config) : config_(config) {
    server_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      nlohmann::json model = {{"id", "fake-model"}, {"object", "model"}, {"max_model_len", 4096}};
      if (config_.report_vocab) model["vocab_size"] = config_.vocab_size;
      res.set_content(nlohmann::json{{"object", "list"}, {"data", {model}}}.dump(), "application/json");
    });
    server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      handle(req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~FakeOpenAiServer() {
    server_.stop();
    thread_.join();
  }

  std::string base_url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  int requests() const { return requests_.load(); }
  int max_in_flight() const { return max_in_flight_.load(); }
  std::vector<std::string> problems() {
    std::lock_guard lock(mutex_);
    return problems_;
  }

 private:
  void problem(const std::string& what) {
    std::lock_guard lock(mutex_);
    problems_.push_back(what);
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    const int n = ++requests_;
    nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);  // [] on a missing key gives null
    const bool valid = body.is_object() && body.value("model", "") == "fake-model" && body["prompt"].is_array() &&
                       !body["prompt"].empty() && body["max_tokens"].is_number_integer() &&
                       body.value("stream", false) && body.value("ignore_eos", false) &&
                       body.value("temperature", -1.0) == 0.0 && body["stream_options"].is_object() &&
                       body["stream_options"].value("include_usage", false);
    if (!valid) {
      problem("bad body: " + req.body.substr(0, 200));
      res.status = 400;
      res.set_content(R"({"error":{"message":"bad request body","type":"invalid_request_error"}})",
                      "application/json");
      return;
    }
    for (const auto& id : body["prompt"])
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= config_.vocab_size) {
        problem("token id out of range: " + id.dump());
        break;
      }
    if (config_.fail_every > 0 && n % config_.fail_every == 0) {
      res.status = 500;
      res.set_content(R"({"error":{"message":"injected failure","type":"server_error"}})", "application/json");
      return;
    }
    const int now = ++in_flight_;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    const int64_t prompt_tokens = static_cast<int64_t>(body["prompt"].size());
    const int64_t max_tokens = body["max_tokens"].get<int64_t>();
    res.set_chunked_content_provider("text/event-stream", [this, prompt_tokens, max_tokens](size_t,
                                                                                         httplib::DataSink& sink) {
      std::this_thread::sleep_for(std::chrono::milliseconds(config_.prefill_ms));
      for (int64_t k = 0; k < max_tokens; ++k) {
        if (k > 0) std::this_thread::sleep_for(std::chrono::milliseconds(config_.decode_ms));
        const nlohmann::json chunk = {
            {"id", "cmpl-fake"},
            {"object", "text_completion"},
            {"model", "fake-model"},
            {"choices",
             {{{"index", 0}, {"text", fmt::format(" t{}", k)},
               {"finish_reason", k + 1 == max_tokens ? nlohmann::json("length") : nlohmann::json(nullptr)}}}}};
        const std::string event = "data: " + chunk.dump() + "\n\n";
        // Two writes per event, so that the client may see an event split across reads.
        sink.write(event.data(), 9);
        sink.write(event.data() + 9, event.size() - 9);
      }
      const nlohmann::json usage = {
          {"id", "cmpl-fake"},
          {"choices", nlohmann::json::array()},
          {"usage",
           {{"prompt_tokens", prompt_tokens}, {"completion_tokens", max_tokens},
            {"total_tokens", prompt_tokens + max_tokens}}}};
      const std::string tail = "data: " + usage.dump() + "\n\ndata: [DONE]\n\n";
      sink.write(tail.data(), tail.size());
      // Out of flight before the client can see the end, so the client's cap bounds this count.
      --in_flight_;
      sink.done();
      return true;
    });
  }

  Config config_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> requests_{0}, in_flight_{0}, max_in_flight_{0};
  std::mutex mutex_;
  std::vector<std::string> problems_;
};

BenchServeOptions fake_run_options(const FakeOpenAiServer& server) {
  BenchServeOptions o;
  o.base_url = server.base_url();
  o.num_prompts = 10;
  o.input_len = 16;
  o.output_len = 6;
  o.show_progress = false;
  o.timeout_s = 30;
  return o;
}

void expect_sane_latencies(const BenchServeResult& r) {
  for (const RequestResult& x : r.results) {
    if (!x.success) continue;
    EXPECT_GT(x.ttft, 0.0);
    EXPECT_GT(x.latency, 0.0);
    EXPECT_LE(x.ttft, x.latency);
    EXPECT_EQ(static_cast<int64_t>(x.itl.size()), x.output_tokens - 1);
    for (double gap : x.itl) EXPECT_GE(gap, 0.0);
  }
  const BenchmarkMetrics& m = r.metrics;
  EXPECT_GT(m.ttft_ms.mean, 0.0);
  EXPECT_GT(m.tpot_ms.mean, 0.0);
  EXPECT_GT(m.itl_ms.mean, 0.0);
  EXPECT_LE(m.ttft_ms.median, m.e2el_ms.median);
  EXPECT_LE(m.ttft_ms.percentiles[0].second, m.e2el_ms.percentiles[0].second);
  EXPECT_LE(m.ttft_ms.median, m.ttft_ms.percentiles[0].second);
  EXPECT_GT(m.duration, 0.0);
  EXPECT_GT(m.output_throughput, 0.0);
}

TEST(BenchServeE2E, RateAndConcurrencyCapAgainstAFakeServer) {
  FakeOpenAiServer server({});
  BenchServeOptions o = fake_run_options(server);
  o.range_ratio = 0.5;
  o.request_rate = 200.0;
  o.max_concurrency = 3;
  o.seed = 11;
  std::FILE* sink = std::tmpfile();
  const BenchServeResult r = run_bench_serve(o, sink);
  std::fclose(sink);
  EXPECT_TRUE(server.problems().empty()) << server.problems().front();
  EXPECT_EQ(r.model_id, "fake-model");  // from GET /v1/models
  EXPECT_EQ(r.vocab_size, 1000);
  EXPECT_EQ(server.requests(), 11);  // the test request, then the 10 prompts
  EXPECT_LE(server.max_in_flight(), 3);
  EXPECT_LE(r.max_in_flight, 3);
  EXPECT_EQ(r.metrics.completed, 10);
  EXPECT_EQ(r.metrics.failed, 0);
  int64_t inputs = 0, outputs = 0;
  RandomDatasetSpec spec{10, 16, 6, 0.5, 1000, 11};
  for (const BenchRequest& q : sample_random_requests(spec)) {
    inputs += static_cast<int64_t>(q.prompt.size());
    outputs += q.output_len;
  }
  EXPECT_EQ(r.metrics.total_input, inputs);
  EXPECT_EQ(r.metrics.total_output, outputs);
  expect_sane_latencies(r);
}

TEST(BenchServeE2E, AllAtOnceWithoutCapAndFailuresCounted) {
  FakeOpenAiServer::Config config;
  config.fail_every = 4;  // requests 4 and 8 of 11 (the test request is 1)
  FakeOpenAiServer server(config);
  BenchServeOptions o = fake_run_options(server);
  o.model = "fake-model";
  std::FILE* sink = std::tmpfile();
  const BenchServeResult r = run_bench_serve(o, sink);
  std::fclose(sink);
  EXPECT_TRUE(server.problems().empty()) << server.problems().front();
  EXPECT_EQ(r.metrics.completed, 8);
  EXPECT_EQ(r.metrics.failed, 2);
  EXPECT_EQ(r.metrics.total_input, 8 * 16);
  EXPECT_EQ(r.metrics.total_output, 8 * 6);
  for (const RequestResult& x : r.results) {
    if (!x.success) {
      EXPECT_THAT(x.error, HasSubstr("HTTP 500: injected failure"));
    }
  }
  expect_sane_latencies(r);
}

TEST(BenchServeE2E, ThroughTheCliWithJsonAndPlot) {
  FakeOpenAiServer server({});
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("fg_bench_serve_{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "result.json").string(), png = (dir / "latency.png").string();
  const bool plot = !find_gnuplot().empty();
  CLI::App app;
  cli::add_bench_serve_command(app);
  app.parse(fmt::format("bench serve --base-url {} --dataset random --input-len 8 --output-len 4 --num-prompts 6 "
                        "--request-rate 100 --max-concurrency 2 --seed 1 --no-progress --metric-percentiles 50,99 "
                        "--json {}{}",
                        server.base_url(), json, plot ? " --plot " + png : ""),
            false);
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["completed"], 6);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["total_input_tokens"], 6 * 8);
  EXPECT_EQ(j["total_output_tokens"], 6 * 4);
  EXPECT_EQ(j["max_concurrency"], 2);
  EXPECT_DOUBLE_EQ(j["request_rate"].get<double>(), 100.0);
  EXPECT_EQ(j["model_id"], "fake-model");
  EXPECT_GT(j["p99_ttft_ms"].get<double>(), 0.0);
  EXPECT_LE(j["median_ttft_ms"].get<double>(), j["median_e2el_ms"].get<double>());
  EXPECT_TRUE(j.contains("p50_itl_ms"));
  EXPECT_EQ(j["itls"].size(), 6u);
  if (plot) {
    EXPECT_TRUE(is_png(png));
  }
  std::filesystem::remove_all(dir);
}

TEST(BenchServeE2E, ConfigurationErrorsNameTheOption) {
  FakeOpenAiServer::Config config;
  config.report_vocab = false;
  FakeOpenAiServer server(config);
  BenchServeOptions o = fake_run_options(server);
  expect_error([&] { run_bench_serve(o); }, "--vocab-size");
  o.vocab_size = 50;
  o.input_len = 5000;  // + 6 output tokens > the fake server's max_model_len of 4096
  expect_error([&] { run_bench_serve(o); }, "max_model_len");
  o.input_len = 16;
  o.endpoint = "/v1/chat/completions";
  expect_error([&] { run_bench_serve(o); }, "--endpoint");
  o.endpoint = "/v1/nowhere/completions";
  expect_error([&] { run_bench_serve(o); }, "test request");
  expect_error([] { parse_request_rate("0"); }, "--request-rate");
  expect_error([] { parse_request_rate("fast"); }, "--request-rate");
  EXPECT_TRUE(std::isinf(parse_request_rate("inf")));
  EXPECT_THAT(parse_percentiles("50,90,99.9"), ElementsAre(50.0, 90.0, 99.9));
  expect_error([] { parse_percentiles("50,,99"); }, "--metric-percentiles");
}

TEST(BenchServeE2E, UnreachableServerFailsWithTheUrl) {
  // A port the kernel handed out and that was closed again: nothing listens there.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  BenchServeOptions o;
  o.timeout_s = 5;
  o.base_url = fmt::format("http://127.0.0.1:{}", port);
  o.vocab_size = 10;
  o.model = "m";
  o.num_prompts = 2;
  o.show_progress = false;
  expect_error([&] { run_bench_serve(o); }, "test request");
}

}  // namespace
}  // namespace fg::bench
