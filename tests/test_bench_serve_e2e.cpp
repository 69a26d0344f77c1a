// tests/test_bench_serve_e2e.cpp — `fullgraph bench serve` end to end against a fake OpenAI SSE
// server started in-process with cpp-httplib on a free loopback port: rate and concurrency caps,
// failures counted, the CLI with JSON and plot, configuration errors naming the option.
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
  add_serve_command(*app.add_subcommand("bench"));
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
