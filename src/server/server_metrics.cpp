// server/server_metrics.cpp — see server_metrics.h. Buckets are vLLM's, with finer ones at the
// low end of the token latencies, where a full-graph engine on a GPU lives (well under 1 ms).
#include "server/server_metrics.h"

#include <tuple>

namespace fg::server {

ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
             1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      itl_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2, 0.3,
            0.4,    0.5,   0.75,   1.0,   2.5,  5.0,   7.5,  10.0,  20.0, 40.0, 80.0}),
      e2e_({0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
            30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}) {}

void ServerMetrics::observe_finished(double e2e_seconds, FinishReason reason) {
  e2e_.observe(e2e_seconds);
  finished_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

std::string ServerMetrics::render(const std::string& model_name, const EngineService* service) const {
  EngineStats stats;
  EngineGauges now;  // the engine's numbers of one moment (Engine::gauges)
  double held = 0;
  if (service != nullptr) {
    stats = service->engine().stats();
    now = service->engine().gauges();
    held = static_cast<double>(service->held());
  }
  PrometheusText out({{"model_name", model_name}});
  // (name, help, value): the engine's gauges of this moment, then its counters since start.
  const std::tuple<const char*, const char*, double> gauges[] = {
      {"fullgraph:num_requests_running", "Requests in the engine's running set.", static_cast<double>(now.running)},
      {"fullgraph:num_requests_waiting", "Requests waiting to be scheduled.", static_cast<double>(now.waiting)},
      {"fullgraph:num_requests_held",
       "Requests the server holds (queued, running, or finishing their response); bounded by "
       "--max-num-seqs + --max-queued-requests.",
       held},
      {"fullgraph:kv_cache_usage_perc", "Fraction of the KV cache's usable blocks in use (1 = full).", now.usage},
      {"fullgraph:kv_cache_free_blocks", "KV-cache blocks free now (including evictable prefix-cache blocks).",
       static_cast<double>(now.free_blocks)},
      {"fullgraph:kv_cache_usable_blocks", "KV-cache blocks that can be handed out (all but the null block).",
       static_cast<double>(now.usable_blocks)},
  };
  const std::tuple<const char*, const char*, double> counters[] = {
      {"fullgraph:prompt_tokens_total", "Prompt tokens of submitted requests.",
       static_cast<double>(stats.prompt_tokens)},
      {"fullgraph:generation_tokens_total", "Generated tokens.", static_cast<double>(stats.generated_tokens)},
      {"fullgraph:num_preemptions_total", "Preemptions (a running request sent back to recompute).",
       static_cast<double>(now.preemptions)},
      {"fullgraph:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
       static_cast<double>(now.prefix_query_tokens)},
      {"fullgraph:prefix_cache_hits_total", "Prompt tokens the prefix cache supplied.",
       static_cast<double>(now.prefix_hit_tokens)},
      {"fullgraph:graph_steps_total", "Engine steps run as one graph replay.", static_cast<double>(stats.graph_steps)},
      {"fullgraph:eager_steps_total", "Engine steps run eagerly (no graph fits the batch).",
       static_cast<double>(stats.eager_steps)},
  };
  for (const auto& [name, help, value] : gauges) out.gauge(name, help, value);
  for (const auto& [name, help, value] : counters) out.counter(name, help, value);
  out.family("fullgraph:request_success_total", "counter", "Finished requests (choices) by finish reason.");
  for (FinishReason reason : {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort})
    out.sample("fullgraph:request_success_total",
               static_cast<double>(finished_[static_cast<size_t>(reason)].load(std::memory_order_relaxed)),
               {{"finished_reason", finish_reason_name(reason)}});
  out.histogram("fullgraph:time_to_first_token_seconds", "Time from submission to the first generated token.",
                ttft_.snapshot());
  out.histogram("fullgraph:inter_token_latency_seconds", "Time between consecutive generated tokens of a request.",
                itl_.snapshot());
  out.histogram("fullgraph:e2e_request_latency_seconds", "Time from submission to the request's end.", e2e_.snapshot());
  return out.text();
}

}  // namespace fg::server
