// server/server_metrics.h — the metric set of /metrics: vLLM's names under a `fullgraph:` prefix
// (num_requests_running, kv_cache_usage_perc, prompt_tokens_total, time_to_first_token_seconds,
// ...), plus fullgraph's own: graph vs eager steps and the KV cache's free and usable blocks (a
// leak shows as free < usable once every request has finished).
//
// Engine-side counts are read from the engine when scraped, so they cannot drift from it; latency
// histograms are fed by the requests as their tokens arrive.
#pragma once

#include <array>
#include <atomic>
#include <string>

#include "engine/request_output.h"
#include "server/engine_service.h"
#include "server/metrics.h"

namespace fg::server {

class ServerMetrics {
 public:
  ServerMetrics();

  void observe_time_to_first_token(double seconds) { ttft_.observe(seconds); }
  void observe_inter_token_latency(double seconds) { itl_.observe(seconds); }
  // A request (one choice) that finished, however it finished.
  void observe_finished(double e2e_seconds, FinishReason reason);

  // The exposition. `service` is null while the model loads: engine values then read 0.
  std::string render(const std::string& model_name, const EngineService* service) const;

 private:
  Histogram ttft_, itl_, e2e_;
  std::array<std::atomic<int64_t>, 4> finished_{};  // by FinishReason
};

}  // namespace fg::server
