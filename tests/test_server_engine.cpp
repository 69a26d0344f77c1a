// tests/test_server_engine.cpp — the server's engine side without HTTP: EngineService (stepping
// thread, admission), the engine's gauges as /metrics reads them, and GenerationJob (n choices,
// seeds, deltas, cancellation), over an executor that needs no model. What matters to a server:
// every admitted request is released exactly once however it ends, a cancelled request's blocks
// are free at once, and the outputs joined equal what was generated.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "server/engine_service.h"
#include "server/generation_job.h"

namespace fg::server {
namespace {

using namespace std::chrono_literals;

// Token = (last token + 1) mod vocab, optionally slowly: enough to be cancelled mid-stream.
class CountingExecutor final : public StepExecutor {
 public:
  explicit CountingExecutor(std::chrono::microseconds delay = 0us) : delay_(delay) {}
  StepResult execute(const std::vector<ScheduledRequest>& requests) override {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    StepResult r;
    for (const ScheduledRequest& q : requests) {
      const int32_t last = q.output_ids.empty() ? q.prompt_ids.back() : q.output_ids.back();
      r.sampled.push_back((last + 1) % 100);
    }
    return r;
  }

 private:
  std::chrono::microseconds delay_;
};

// Fails its third step, as a device error would.
class FailingExecutor final : public StepExecutor {
 public:
  StepResult execute(const std::vector<ScheduledRequest>& requests) override {
    FG_CHECK(++steps_ < 3, "device lost");
    StepResult r;
    r.sampled.assign(requests.size(), 1);
    return r;
  }

 private:
  int steps_ = 0;
};

struct Fixture {
  explicit Fixture(std::chrono::microseconds delay = 0us) : executor(delay), kv({33, 4, true}) {
    EngineOptions o;
    o.max_model_len = 128;
    o.vocab_size = 100;
    o.scheduler.max_num_seqs = 8;
    engine = std::make_unique<Engine>(executor, kv, nullptr, o);
    service = std::make_unique<EngineService>(*engine);
  }
  ParsedRequest request(int64_t n, int64_t max_tokens) const {
    ParsedRequest r;
    r.prompt = {1, 2, 3};
    r.n = n;
    r.spec.stop.max_tokens = max_tokens;
    r.spec.stop.ignore_eos = true;
    return r;
  }
  CountingExecutor executor;
  KvBlockManager kv;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<EngineService> service;
  ServerMetrics metrics;
};

TEST(ServerEngine, ChoicesRunToTheirLengthAndRelease) {
  Fixture f;
  ASSERT_TRUE(f.service->try_admit(3, 10));
  auto job = std::make_shared<GenerationJob>(*f.service, f.metrics, 3, /*keep_deltas=*/false);
  job->submit(f.request(3, 5));
  ASSERT_TRUE(job->wait_finished(10s));
  for (const ChoiceOutput& c : job->outputs()) {
    EXPECT_EQ(c.token_ids, (std::vector<int32_t>{4, 5, 6, 7, 8}));
    EXPECT_EQ(c.finish_reason, FinishReason::kLength);
  }
  EXPECT_EQ(job->usage().prompt_tokens, 3);
  EXPECT_EQ(job->usage().completion_tokens, 15);
  EXPECT_EQ(f.service->held(), 0);
  // A request's blocks are free before its last delta is sent: no waiting for a step to end.
  const EngineGauges kv = f.service->engine().gauges();
  EXPECT_EQ(kv.free_blocks, kv.usable_blocks);
  EXPECT_EQ(kv.running, 0);
}

// The value of a sample of `name` in Prometheus text (the first line that starts with it).
double metric_value(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name + "{", 0) == 0 || line.rfind(name + " ", 0) == 0)
      return std::stod(line.substr(line.rfind(' ')));
  ADD_FAILURE() << "no sample of " << name;
  return -1;
}

// /metrics read from inside the callback of a request's last token, while the step that finished
// it is still in flight: the engine must already count the request out and its blocks free. (The
// server once read running live but the KV cache from a snapshot taken after the previous step,
// and showed an idle engine holding blocks; the load test took it for a leak.)
TEST(ServerEngine, MetricsAgreeWhileAStepFinishesARequest) {
  Fixture f;
  std::string at_finish;
  std::promise<void> finished;
  RequestSpec spec;
  spec.prompt = {1, 2, 3};
  spec.stop.max_tokens = 6;
  spec.stop.ignore_eos = true;
  spec.on_output = [&](const RequestOutput& out) {
    if (!out.finished) return;
    at_finish = f.metrics.render("m", f.service.get());
    finished.set_value();
  };
  f.service->submit(std::move(spec));
  ASSERT_EQ(finished.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(metric_value(at_finish, "fullgraph:num_requests_running"), 0) << at_finish;
  EXPECT_EQ(metric_value(at_finish, "fullgraph:kv_cache_free_blocks"),
            metric_value(at_finish, "fullgraph:kv_cache_usable_blocks"))
      << at_finish;
}

TEST(ServerEngine, AdmissionIsBounded) {
  Fixture f;
  EXPECT_TRUE(f.service->try_admit(6, 8));
  EXPECT_FALSE(f.service->try_admit(3, 8));
  EXPECT_TRUE(f.service->try_admit(2, 8));
  f.service->release(8);
  EXPECT_EQ(f.service->held(), 0);
}

TEST(ServerEngine, CancelFreesBlocksAndEndsTheStream) {
  Fixture f(2ms);
  ASSERT_TRUE(f.service->try_admit(2, 10));
  auto job = std::make_shared<GenerationJob>(*f.service, f.metrics, 2, /*keep_deltas=*/true);
  job->submit(f.request(2, 50));
  std::vector<GenerationJob::Delta> got;
  while (got.empty()) got = job->take_deltas(1s);
  EXPECT_FALSE(job->finished());
  // The request runs ~50 steps of 2 ms: its blocks are in use, and the gauges say so at once.
  const EngineGauges running = f.service->engine().gauges();
  EXPECT_LT(running.free_blocks, running.usable_blocks);
  EXPECT_EQ(running.running + running.waiting, 2);
  EXPECT_FALSE(job->finished());
  job->cancel_unfinished();
  EXPECT_TRUE(job->finished());  // at once: the cancel ran the callbacks
  // The blocks are free at once, whatever step is in flight.
  const EngineGauges kv = f.service->engine().gauges();
  EXPECT_EQ(kv.free_blocks, kv.usable_blocks);
  EXPECT_EQ(kv.running + kv.waiting, 0);
  EXPECT_EQ(f.service->held(), 0);
  int aborted = 0;
  for (const auto& d : job->take_deltas(0ms))
    aborted += d.output.finished && d.output.finish_reason == FinishReason::kAbort;
  EXPECT_EQ(aborted, 2);
  EXPECT_NE(f.metrics.render("m", f.service.get()).find("finished_reason=\"abort\"} 2"), std::string::npos);
}

TEST(ServerEngine, RefusedSubmitReleasesAndCancels) {
  Fixture f;
  ASSERT_TRUE(f.service->try_admit(2, 10));
  auto job = std::make_shared<GenerationJob>(*f.service, f.metrics, 2, false);
  ParsedRequest r = f.request(2, 5);
  r.prompt = {1, 200};  // outside the vocabulary of 100: the engine refuses
  try {
    job->submit(r);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
  }
  EXPECT_EQ(f.service->held(), 0);
}

TEST(ServerEngine, AFailedStepEndsEveryStreamAndRefusesNewWork) {
  FailingExecutor executor;
  KvBlockManager kv({33, 4, true});
  EngineOptions o;
  o.max_model_len = 128;
  o.vocab_size = 100;
  Engine engine(executor, kv, nullptr, o);
  EngineService service(engine);
  ServerMetrics metrics;
  ParsedRequest r;
  r.prompt = {1, 2, 3};
  r.spec.stop.max_tokens = 20;
  ASSERT_TRUE(service.try_admit(1, 10));
  auto job = std::make_shared<GenerationJob>(service, metrics, 1, false);
  job->submit(r);
  ASSERT_TRUE(job->wait_finished(10s));
  EXPECT_EQ(job->outputs()[0].finish_reason, FinishReason::kAbort);
  ASSERT_TRUE(service.fatal_error().has_value());
  EXPECT_NE(service.fatal_error()->find("device lost"), std::string::npos);
  EXPECT_EQ(service.held(), 0);
  const EngineGauges gauges = engine.gauges();
  EXPECT_EQ(gauges.free_blocks, gauges.usable_blocks);
  ASSERT_TRUE(service.try_admit(1, 10));
  auto late = std::make_shared<GenerationJob>(service, metrics, 1, false);
  try {
    late->submit(r);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 503);
  }
  EXPECT_EQ(service.held(), 0);
}

TEST(ServerEngine, ChoiceSeedsWrapRatherThanOverflow) {
  // Choice i gets seed + i; from INT64_MAX that wraps (a seed is only a Philox key).
  Fixture f;
  ASSERT_TRUE(f.service->try_admit(2, 10));
  auto job = std::make_shared<GenerationJob>(*f.service, f.metrics, 2, false);
  ParsedRequest r = f.request(2, 2);
  r.spec.has_seed = true;
  r.spec.sampling.seed = INT64_MAX;  // wraps for choice 1 rather than overflowing
  job->submit(r);
  EXPECT_TRUE(job->wait_finished(10s));
}

}  // namespace
}  // namespace fg::server
