// tests/test_engine.cpp — the engine and scheduler on synthetic traces, with an executor that
// models a paged KV cache instead of a model: it writes each scheduled token into the slot its
// block table names, and "samples" the next token as a hash of everything the request's block
// table reads back (positions 0..n-1), its seed and its step. A block handed to two requests at
// once, a block freed too early and reused, a wrong prefix-cache hit or a token lost or repeated
// by preemption all change what is read back, and so the tokens; the oracle is the same request
// run alone in a large cache without prefix caching.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <random>

#include "engine/engine.h"

namespace fg {
namespace {

constexpr int64_t kVocab = 1000;

class KvModelExecutor final : public StepExecutor {
 public:
  KvModelExecutor(int64_t num_blocks, int64_t block_size)
      : block_size_(block_size), slots_(static_cast<size_t>(num_blocks * block_size), -1) {}

  StepResult execute(const std::vector<ScheduledRequest>& requests) override {
    StepResult result;
    std::map<int64_t, size_t> written;  // slot -> request index, this step
    for (size_t r = 0; r < requests.size(); ++r) {
      const ScheduledRequest& q = requests[r];
      const int64_t n = static_cast<int64_t>(q.token_ids.size());
      FG_CHECK(n >= 1, "a scheduled request without tokens");
      for (int64_t j = 0; j < n; ++j) {
        const int64_t slot = slot_of(q, q.num_computed + j);
        FG_CHECK(!written.contains(slot), "slot {} written by two requests in one step", slot);
        written[slot] = r;
        slots_[static_cast<size_t>(slot)] = q.token_ids[static_cast<size_t>(j)];
      }
    }
    for (const ScheduledRequest& q : requests) {
      uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(q.sampling.seed) * 31 ^
                   static_cast<uint64_t>(q.sampling.step) * 1000003;
      const int64_t len = q.num_computed + static_cast<int64_t>(q.token_ids.size());
      for (int64_t pos = 0; pos < len; ++pos)
        h = (h ^ static_cast<uint64_t>(slots_[static_cast<size_t>(slot_of(q, pos))] + 7)) * 1099511628211ull;
      result.sampled.push_back(static_cast<int32_t>((h >> 17) % kVocab));
    }
    ++steps_;
    return result;
  }
  int64_t steps() const { return steps_; }

 private:
  int64_t slot_of(const ScheduledRequest& q, int64_t pos) const {
    const int64_t b = pos / block_size_;
    FG_CHECK(b < static_cast<int64_t>(q.block_ids.size()), "position {} past the request's {} blocks", pos,
             q.block_ids.size());
    const int32_t block = q.block_ids[static_cast<size_t>(b)];
    FG_CHECK(block > 0 && block * block_size_ < static_cast<int64_t>(slots_.size()), "block id {} is invalid", block);
    return block * block_size_ + pos % block_size_;
  }

  int64_t block_size_;
  std::vector<int32_t> slots_;  // [num_blocks * block_size] the token whose "KV" each slot holds
  int64_t steps_ = 0;
};

struct TraceRequest {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 1;
  int64_t seed = 0;
  int64_t arrival_step = 0;
  int64_t cancel_step = -1;  // -1: never
};

struct Collected {
  std::vector<int32_t> tokens;  // joined deltas
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  int64_t finished_deltas = 0;
};

EngineOptions engine_options(int64_t budget, int64_t max_seqs) {
  EngineOptions o;
  o.scheduler.max_num_batched_tokens = budget;
  o.scheduler.max_num_seqs = max_seqs;
  o.max_model_len = 4096;
  o.vocab_size = kVocab;
  return o;
}

RequestSpec spec_of(const TraceRequest& t, Collected* sink) {
  RequestSpec s;
  s.prompt = t.prompt;
  s.sampling.temperature = 1.0f;  // ignored by the executor; the seed and step are what it reads
  s.sampling.seed = t.seed;
  s.has_seed = true;
  s.stop.max_tokens = t.max_tokens;
  s.on_output = [sink](const RequestOutput& o) {
    FG_CHECK(!sink->finished, "a delta after the finished one");
    sink->tokens.insert(sink->tokens.end(), o.token_ids.begin(), o.token_ids.end());
    if (o.finished) {
      sink->finished = true;
      sink->reason = o.finish_reason;
      ++sink->finished_deltas;
    }
  };
  return s;
}

// The request alone, in a cache large enough for it, without prefix caching.
std::vector<int32_t> run_alone(const TraceRequest& t, int64_t block_size) {
  const int64_t blocks = (static_cast<int64_t>(t.prompt.size()) + t.max_tokens) / block_size + 2;
  KvBlockManager kv({blocks, block_size, /*enable_prefix_caching=*/false});
  KvModelExecutor executor(blocks, block_size);
  Engine engine(executor, kv, nullptr, engine_options(4096, 1));
  Collected c;
  engine.submit(spec_of(t, &c));
  while (engine.step()) {
  }
  return c.tokens;
}

// A waiting request whose prompt is `length` copies of `token`.
SchedRequest prompt_request(uint64_t id, int64_t arrival, int64_t length, int32_t token) {
  SchedRequest r;
  r.id = id;
  r.arrival = arrival;
  r.tokens.assign(static_cast<size_t>(length), token);
  r.num_prompt_tokens = length;
  return r;
}

TEST(Scheduler, PrefillIsChunkedByTheBudgetAndDecodesRunFirst) {
  KvBlockManager kv({64, 4, true});
  Scheduler scheduler({/*max_num_batched_tokens=*/8, /*max_num_seqs=*/4}, kv);
  SchedRequest a = prompt_request(1, 0, 10, 3), b = prompt_request(2, 1, 5, 4);
  scheduler.add(&a);
  scheduler.add(&b);
  SchedulerOutput s1 = scheduler.schedule();
  ASSERT_EQ(s1.chunks.size(), 1u);  // a takes the whole budget
  EXPECT_EQ(s1.chunks[0].num_tokens, 8);
  scheduler.finish_step(s1);
  SchedulerOutput s2 = scheduler.schedule();
  ASSERT_EQ(s2.chunks.size(), 2u);  // the rest of a first, then b's first chunk
  EXPECT_EQ(s2.chunks[0].request, &a);
  EXPECT_EQ(s2.chunks[0].num_tokens, 2);
  EXPECT_EQ(s2.chunks[1].request, &b);
  EXPECT_EQ(s2.chunks[1].num_tokens, 5);
  EXPECT_EQ(s2.num_tokens, 7);
  scheduler.remove(&a);
  scheduler.remove(&b);
  EXPECT_EQ(kv.num_free_blocks(), kv.num_usable_blocks());
}

TEST(Scheduler, PreemptsTheNewestRequestWhenBlocksRunOut) {
  KvBlockManager kv({4, 4, false});  // 3 usable blocks of 4 tokens
  Scheduler scheduler({64, 4}, kv);
  SchedRequest a = prompt_request(1, 0, 4, 1), b = prompt_request(2, 1, 8, 2);
  scheduler.add(&a);
  scheduler.add(&b);
  SchedulerOutput s1 = scheduler.schedule();
  ASSERT_EQ(s1.chunks.size(), 2u);
  scheduler.finish_step(s1);
  a.tokens.push_back(5);  // a decodes into a 4th block: b, the newest, must go
  b.tokens.push_back(6);
  SchedulerOutput s2 = scheduler.schedule();
  ASSERT_EQ(s2.preempted, std::vector<uint64_t>{2});
  ASSERT_EQ(s2.chunks.size(), 1u);
  EXPECT_EQ(s2.chunks[0].request, &a);
  EXPECT_EQ(b.num_computed, 0);
  EXPECT_EQ(scheduler.num_waiting(), 1u);
  EXPECT_EQ(scheduler.num_preemptions(), 1);
  kv.check_invariants();
}

// vLLM's priority policy: waiting requests are admitted by (priority, arrival), and when blocks run
// out the running request last in that order is preempted, however old it is; under first come,
// first served the priorities are ignored.
TEST(Scheduler, PriorityPolicyAdmitsAndPreemptsByPriority) {
  for (const SchedulingPolicy policy : {SchedulingPolicy::kPriority, SchedulingPolicy::kFcfs}) {
    const bool by_priority = policy == SchedulingPolicy::kPriority;
    KvBlockManager kv({4, 4, false});  // 3 usable blocks of 4 tokens
    Scheduler scheduler({64, 2, policy}, kv);
    SchedRequest a = prompt_request(1, 0, 4, 1), b = prompt_request(2, 1, 4, 2), c = prompt_request(3, 2, 4, 3);
    a.priority = 5;  // the oldest, and the least urgent
    b.priority = 0;
    c.priority = -1;
    scheduler.add(&a);
    SchedulerOutput s1 = scheduler.schedule();  // a alone
    ASSERT_EQ(s1.chunks.size(), 1u);
    scheduler.finish_step(s1);
    scheduler.add(&b);
    scheduler.add(&c);
    a.tokens.push_back(7);
    SchedulerOutput s2 = scheduler.schedule();  // a's decode, and one of b and c (two requests at most)
    ASSERT_EQ(s2.chunks.size(), 2u);
    EXPECT_EQ(s2.chunks[1].request, by_priority ? &c : &b);
    scheduler.finish_step(s2);
    SchedRequest& admitted = *s2.chunks[1].request;
    a.tokens.push_back(7);  // a needs a second block, and the newcomer one more: 4 of 3
    admitted.tokens.push_back(7);
    admitted.tokens.push_back(7);
    admitted.tokens.push_back(7);
    admitted.tokens.push_back(7);
    SchedulerOutput s3 = scheduler.schedule();
    ASSERT_FALSE(s3.preempted.empty());
    EXPECT_EQ(s3.preempted[0], by_priority ? a.id : admitted.id) << "the running request last in the order goes";
    kv.check_invariants();
  }
}

TEST(Engine, RefusesRequestsThatCanNeverRun) {
  KvBlockManager kv({5, 4, true});  // 16 tokens of KV
  KvModelExecutor executor(5, 4);
  Engine engine(executor, kv, nullptr, engine_options(64, 4));
  TraceRequest t{{1, 2, 3}, 20, 0, 0, -1};
  Collected c;
  try {
    engine.submit(spec_of(t, &c));
    FAIL() << "accepted a request needing 6 blocks of a 4-block cache";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("could never run"), std::string::npos) << e.what();
  }
  t.prompt = {};
  EXPECT_THROW(engine.submit(spec_of(t, &c)), Error);
  t.prompt = {1, kVocab};
  t.max_tokens = 2;
  EXPECT_THROW(engine.submit(spec_of(t, &c)), Error);
  EXPECT_FALSE(engine.has_unfinished());
}

TEST(Engine, RefusesBadLogitBiasNamingTheToken) {
  KvBlockManager kv({32, 4, true});
  KvModelExecutor executor(32, 4);
  Engine engine(executor, kv, nullptr, engine_options(64, 4));
  TraceRequest t{{1, 2, 3}, 2, 0, 0, -1};
  Collected c;
  const auto error_with = [&](std::vector<std::pair<int32_t, float>> bias) {
    RequestSpec spec = spec_of(t, &c);
    spec.logit_bias = std::move(bias);
    try {
      engine.submit(std::move(spec));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_with({{kVocab, 1.0f}}).find("token id " + std::to_string(kVocab) + " is outside"), std::string::npos);
  EXPECT_NE(error_with({{4, 100.5f}}).find("the bias of token 4 is 100.5"), std::string::npos);
  EXPECT_NE(error_with({{4, std::nanf("")}}).find("the bias of token 4"), std::string::npos);
  EXPECT_NE(error_with({{4, 1.0f}, {5, 2.0f}, {4, 3.0f}}).find("token id 4 is listed twice"), std::string::npos);
  EXPECT_FALSE(engine.has_unfinished());
  EXPECT_EQ(error_with({{4, -100.0f}, {5, 100.0f}}), "accepted");
}

TEST(Engine, CancelFreesTheBlocksAtOnceAndEndsTheStream) {
  KvBlockManager kv({32, 4, true});
  KvModelExecutor executor(32, 4);
  Engine engine(executor, kv, nullptr, engine_options(64, 4));
  Collected c;
  const uint64_t id = engine.submit(spec_of({{1, 2, 3, 4, 5, 6, 7}, 50, 1, 0, -1}, &c));
  engine.step();
  engine.step();
  EXPECT_LT(kv.num_free_blocks(), kv.num_usable_blocks());
  EXPECT_TRUE(engine.cancel(id));
  EXPECT_EQ(kv.num_free_blocks(), kv.num_usable_blocks());
  EXPECT_TRUE(c.finished);
  EXPECT_EQ(c.reason, FinishReason::kAbort);
  EXPECT_EQ(c.tokens.size(), 2u);
  EXPECT_FALSE(engine.cancel(id));
  EXPECT_FALSE(engine.step());
}

// rapidcheck scales inRange with the test size, which leaves early cases tiny; the trace's shape
// is drawn at the nominal size so that preemption, eviction and prefix hits are common.
template <typename T>
T uniform(T lo, T hi) {  // in [lo, hi)
  return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(lo, hi));
}

// Random traces: arrivals over time, prompts sharing prefixes (so the prefix cache hits), a
// pool small enough to force preemption and eviction, random budgets and request caps, and
// cancellations.
RC_GTEST_PROP(EngineProperty, EveryRequestMatchesItsSoloRunWithNoBlockLeaked, ()) {
  const int64_t block_size = *rc::gen::element<int64_t>(1, 2, 4, 16);
  const int64_t budget = uniform<int64_t>(1, 48);
  const int64_t max_seqs = uniform<int64_t>(1, 9);
  const int num_requests = uniform<int>(1, 16);
  const bool prefix_caching = uniform<int>(0, 2) == 1;
  const std::vector<int32_t> shared = *rc::gen::container<std::vector<int32_t>>(
      static_cast<size_t>(uniform<int>(0, 40)), rc::gen::inRange<int32_t>(0, 5));

  std::vector<TraceRequest> trace;
  int64_t largest_need = 1;
  for (int i = 0; i < num_requests; ++i) {
    TraceRequest t;
    const size_t keep = static_cast<size_t>(uniform<int64_t>(0, static_cast<int64_t>(shared.size()) + 1));
    t.prompt.assign(shared.begin(), shared.begin() + static_cast<std::ptrdiff_t>(keep));
    const auto tail = *rc::gen::container<std::vector<int32_t>>(static_cast<size_t>(uniform<int>(1, 20)),
                                                                 rc::gen::inRange<int32_t>(0, 5));
    t.prompt.insert(t.prompt.end(), tail.begin(), tail.end());
    t.max_tokens = uniform<int64_t>(1, 24);
    t.seed = uniform<int64_t>(0, 3);
    t.arrival_step = uniform<int64_t>(0, 30);
    if (uniform<int>(0, 5) == 0) t.cancel_step = t.arrival_step + uniform<int64_t>(0, 20);
    largest_need = std::max<int64_t>(largest_need, (static_cast<int64_t>(t.prompt.size()) + t.max_tokens - 1 +
                                                    block_size - 1) / block_size);
    trace.push_back(t);
  }
  const int64_t num_blocks = largest_need + 1 + uniform<int64_t>(0, 2 * largest_need);

  KvBlockManager kv({num_blocks, block_size, prefix_caching});
  KvModelExecutor executor(num_blocks, block_size);
  Engine engine(executor, kv, nullptr, engine_options(budget, max_seqs));
  std::vector<Collected> got(trace.size());
  std::vector<uint64_t> ids(trace.size(), 0);
  int64_t step = 0;
  size_t submitted = 0;
  while (submitted < trace.size() || engine.has_unfinished()) {
    for (size_t i = 0; i < trace.size(); ++i) {
      if (ids[i] == 0 && trace[i].arrival_step <= step) {
        ids[i] = engine.submit(spec_of(trace[i], &got[i]));
        ++submitted;
      }
      if (ids[i] != 0 && trace[i].cancel_step == step) engine.cancel(ids[i]);
    }
    engine.step();
    kv.check_invariants();
    ++step;
    RC_ASSERT(step < 100000);
  }
  RC_ASSERT(kv.num_free_blocks() == kv.num_usable_blocks());
  for (size_t i = 0; i < trace.size(); ++i) {
    RC_ASSERT(got[i].finished);
    RC_ASSERT(got[i].finished_deltas == 1);
    const std::vector<int32_t> alone = run_alone(trace[i], block_size);
    RC_ASSERT(static_cast<int64_t>(alone.size()) == trace[i].max_tokens);
    if (got[i].reason == FinishReason::kAbort) {
      RC_ASSERT(got[i].tokens.size() <= alone.size());
      RC_ASSERT(std::equal(got[i].tokens.begin(), got[i].tokens.end(), alone.begin()));
    } else {
      RC_ASSERT(got[i].reason == FinishReason::kLength);
      RC_ASSERT(got[i].tokens == alone);
    }
  }
  RC_TAG(engine.num_preemptions() > 0 ? "preempted" : "no preemption");
  RC_TAG(kv.stats().prefix_hit_tokens > 0 ? "prefix hits" : "no prefix hits");
}

}  // namespace
}  // namespace fg
