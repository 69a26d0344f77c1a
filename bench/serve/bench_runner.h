// bench/serve/bench_runner.h — drives the benchmark traffic: sends request i at its scheduled
// arrival time, holds at most --max-concurrency requests in flight, and collects the results.
//
// Each request in flight is a thread blocked on its HTTP stream (cpp-httplib is synchronous), so
// the number of threads is the number of requests in flight. A request waiting for a concurrency
// slot is not yet sent: as in vLLM, its TTFT starts when it goes out, not when it arrived.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "bench/serve/random_dataset.h"
#include "bench/serve/request_result.h"

namespace fg::bench {

struct TrafficSpec {
  double request_rate = 0.0;  // requests/s; infinity sends all at once
  double burstiness = 1.0;    // gamma shape of the gaps; 1 = Poisson
  int64_t max_concurrency = 0;  // 0 = no cap
  uint64_t seed = 0;
  bool show_progress = false;  // a progress line on stderr
};

struct TrafficOutcome {
  std::vector<RequestResult> results;  // in request order
  double duration_s = 0.0;             // first send to last completion
  int64_t max_in_flight = 0;           // the most requests that were out at once
};

// Sends one request and measures it; must not throw (the runner turns an exception into a failed
// result anyway, so that one bad request cannot end the benchmark).
using SendRequest = std::function<RequestResult(const BenchRequest&)>;

TrafficOutcome run_traffic(const std::vector<BenchRequest>& requests, const TrafficSpec& spec, const SendRequest& send);

}  // namespace fg::bench
