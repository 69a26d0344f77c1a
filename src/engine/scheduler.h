// engine/scheduler.h — continuous batching: which requests run in the next step and how many of
// their tokens, under a token budget and a cap on requests, over a paged KV cache that may run
// out (DESIGN.md, "Layers and data flow"). Plain CPU code: no model, no CUDA.
//
// Policy (vLLM v1's). Requests are ordered by arrival (first come, first served) or, under the
// priority policy, by (priority, arrival): a lower priority value first, ties by arrival. "Oldest"
// and "newest" below mean first and last in that order.
//  1. Running requests first, oldest first: each gets all its uncomputed tokens (one for a
//     decode; the rest of its prompt, cut to the remaining budget, for a chunked prefill).
//     When its KV blocks cannot be allocated, the newest running request is preempted by
//     recompute (its blocks are freed, it goes back to the front of the waiting queue and will
//     prefill its prompt and everything it generated again) until the allocation succeeds or it
//     is the one preempted.
//  2. Then, if nothing was preempted in this step, waiting requests in that order while the
//     budget, the request cap and the free blocks allow; each starts from its longest cached
//     prefix. (A preempted request goes back ahead of every waiting one under first come, first
//     served, and to its place by priority under the priority policy.)
// A preempted request keeps its generated tokens: the engine never streams a token twice, and
// since sampling depends only on (seed, step), it resumes exactly where it stopped.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "engine/kv_block_manager.h"

namespace fg {

enum class SchedulingPolicy { kFcfs, kPriority };

// "fcfs" or "priority" (vLLM's --scheduling-policy); throws naming the choices.
SchedulingPolicy parse_scheduling_policy(const std::string& name);

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 512;  // tokens in one step
  int64_t max_num_seqs = 256;            // requests in one step
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
};

// The scheduler's view of one request; the engine owns it and appends sampled tokens.
struct SchedRequest {
  uint64_t id = 0;
  int64_t arrival = 0;            // submission order: lower is older
  int64_t priority = 0;           // under the priority policy: lower runs first
  bool skip_prefix_cache = false; // computes its whole prompt (prompt logprobs need every position)
  std::vector<int32_t> tokens;    // [prompt + generated so far]
  int64_t num_prompt_tokens = 0;
  int64_t num_computed = 0;       // leading tokens whose KV is in the request's blocks
  int64_t num_cached_tokens = -1; // tokens the prefix cache supplied at first admission (-1: not yet)
  int64_t num_preemptions = 0;
  bool running = false;
};

struct ScheduledChunk {
  SchedRequest* request = nullptr;
  int64_t num_tokens = 0;  // tokens[num_computed, num_computed + num_tokens) run in this step
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;
  std::vector<uint64_t> preempted;  // requests sent back to waiting by this step
  int64_t num_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, KvBlockManager& kv);

  // Queues a request (not owned; it must stay alive until remove()).
  void add(SchedRequest* request);
  // Drops a request wherever it is and frees its blocks at once (finished or cancelled).
  void remove(SchedRequest* request);

  SchedulerOutput schedule();
  // After the step ran: the scheduled tokens are computed; full blocks enter the prefix cache.
  void finish_step(const SchedulerOutput& output);

  size_t num_waiting() const { return waiting_.size(); }
  size_t num_running() const { return running_.size(); }
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  int64_t num_preemptions() const { return num_preemptions_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  void preempt(SchedRequest* request);
  void insert_running(SchedRequest* request);
  // Whether a comes before b in the policy's order.
  bool before(const SchedRequest* a, const SchedRequest* b) const;

  SchedulerConfig config_;
  KvBlockManager& kv_;
  std::deque<SchedRequest*> waiting_;   // front first
  std::vector<SchedRequest*> running_;  // in the policy's order: the newest is at the back
  int64_t num_preemptions_ = 0;
};

}  // namespace fg
