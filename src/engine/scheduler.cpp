// engine/scheduler.cpp — the scheduling policy described in scheduler.h.
#include "engine/scheduler.h"

#include <algorithm>

#include "core/error.h"

namespace fg {

Scheduler::Scheduler(SchedulerConfig config, KvBlockManager& kv) : config_(config), kv_(kv) {
  FG_CHECK(config_.max_num_batched_tokens >= 1, "scheduler: max_num_batched_tokens must be positive, got {}",
           config_.max_num_batched_tokens);
  FG_CHECK(config_.max_num_seqs >= 1, "scheduler: max_num_seqs must be positive, got {}", config_.max_num_seqs);
}

SchedulingPolicy parse_scheduling_policy(const std::string& name) {
  if (name == "fcfs") return SchedulingPolicy::kFcfs;
  if (name == "priority") return SchedulingPolicy::kPriority;
  fail("unknown scheduling policy '{}' (expected fcfs or priority)", name);
}

bool Scheduler::before(const SchedRequest* a, const SchedRequest* b) const {
  if (config_.policy == SchedulingPolicy::kPriority && a->priority != b->priority) return a->priority < b->priority;
  return a->arrival < b->arrival;
}

void Scheduler::add(SchedRequest* request) {
  FG_ASSERT(request != nullptr && !request->tokens.empty());
  if (config_.policy == SchedulingPolicy::kFcfs) {
    waiting_.push_back(request);  // arrivals only grow
    return;
  }
  waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), request,
                                   [this](const SchedRequest* a, const SchedRequest* b) { return before(a, b); }),
                  request);
}

void Scheduler::remove(SchedRequest* request) {
  std::erase(waiting_, request);
  std::erase(running_, request);
  request->running = false;
  kv_.free(request->id);
}

void Scheduler::insert_running(SchedRequest* request) {
  auto at = std::upper_bound(running_.begin(), running_.end(), request,
                             [this](const SchedRequest* a, const SchedRequest* b) { return before(a, b); });
  running_.insert(at, request);
  request->running = true;
}

void Scheduler::preempt(SchedRequest* request) {
  std::erase(running_, request);
  kv_.free(request->id);
  request->running = false;
  request->num_computed = 0;
  ++request->num_preemptions;
  ++num_preemptions_;
  if (config_.policy == SchedulingPolicy::kFcfs) {
    waiting_.push_front(request);
  } else {
    add(request);
  }
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int64_t budget = config_.max_num_batched_tokens;

  // 1. Running requests, oldest first. A request preempted in this loop sits behind the cursor
  //    only if it is the current one (the newest is at the back, never before the cursor).
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    SchedRequest* request = running_[i];
    const int64_t left = static_cast<int64_t>(request->tokens.size()) - request->num_computed;
    const int64_t n = std::min(left, budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    bool scheduled = false;
    while (true) {
      if (kv_.allocate(request->id, request->num_computed + n)) {
        scheduled = true;
        break;
      }
      SchedRequest* victim = running_.back();
      out.preempted.push_back(victim->id);
      preempt(victim);
      if (victim == request) break;
    }
    if (!scheduled) break;  // it was the newest: nothing after it is left to schedule
    out.chunks.push_back({request, n});
    out.num_tokens += n;
    budget -= n;
    ++i;
  }

  // 2. Waiting requests, while nothing had to be preempted.
  while (out.preempted.empty() && budget > 0 && !waiting_.empty() &&
         static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
    SchedRequest* request = waiting_.front();
    FG_ASSERT(!kv_.holds(request->id) && request->num_computed == 0);
    const int64_t cached = request->skip_prefix_cache ? 0 : kv_.acquire_cached_prefix(request->id, request->tokens);
    const int64_t n = std::min(static_cast<int64_t>(request->tokens.size()) - cached, budget);
    if (!kv_.allocate(request->id, cached + n)) {
      kv_.free(request->id);  // give the cached prefix back: the request stays waiting
      break;
    }
    waiting_.pop_front();
    request->num_computed = cached;
    if (request->num_cached_tokens < 0) request->num_cached_tokens = cached;
    insert_running(request);
    out.chunks.push_back({request, n});
    out.num_tokens += n;
    budget -= n;
  }
  return out;
}

void Scheduler::finish_step(const SchedulerOutput& output) {
  for (const ScheduledChunk& chunk : output.chunks) {
    SchedRequest* request = chunk.request;
    if (!request->running) continue;  // removed (cancelled) while the step ran
    request->num_computed += chunk.num_tokens;
    FG_ASSERT(request->num_computed <= static_cast<int64_t>(request->tokens.size()));
    kv_.cache_full_blocks(request->id, request->tokens, request->num_computed);
  }
}

}  // namespace fg
