// tests/test_tensor_parallel_server.cpp — a rank that fails under the server's engine: the
// request in flight ends (abort), the engine reports the failed rank as its fatal error, and new
// work is refused with 503, as /health then answers (serve exits 1 on it; serve_command.cpp).
#include <gtest/gtest.h>

#include <chrono>

#include "server/engine_service.h"
#include "server/generation_job.h"
#include "tensor_parallel_test_support.h"

namespace fg {
namespace {

using namespace std::chrono_literals;
using server::ApiError;
using server::EngineService;
using server::GenerationJob;
using server::ParsedRequest;
using server::ServerMetrics;

TEST(TensorParallelServer, AFailingRankStopsTheEngineAndItsRequests) {
  RunnerOptions options;
  options.max_num_tokens = 16;
  options.max_num_seqs = 4;
  options.capture_sizes = {1, 2, 4};
  auto runner = test::make_tp_runner("tiny-llama", 2, options, 64);
  int steps = 0;
  runner->runner(1).set_staging_hook([&steps](const StepLayout&, void*) {
    if (++steps == 3) throw Error("rank 1 lost its device");  // the third graph step
  });
  KvBlockManager kv({64, 16, true});
  EngineOptions o;
  o.max_model_len = 128;
  o.vocab_size = 512;
  Engine engine(*runner, kv, nullptr, o);
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
  EXPECT_NE(service.fatal_error()->find("rank 1 failed: rank 1 lost its device"), std::string::npos)
      << *service.fatal_error();
  ASSERT_TRUE(service.try_admit(1, 10));
  auto late = std::make_shared<GenerationJob>(service, metrics, 1, false);
  try {
    late->submit(r);
    FAIL() << "a request after the failure was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 503);
  }
}

}  // namespace
}  // namespace fg
