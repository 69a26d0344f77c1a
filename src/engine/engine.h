// engine/engine.h — the engine API the CLI and the server use: submit requests, cancel them, and
// receive each request's stream of deltas (new token ids, new text, logprobs, the finish).
//
// One thread drives step(); submit() and cancel() may come from any thread. A step schedules
// under the engine lock, runs the model without it, then appends the sampled tokens, checks stop
// conditions and collects the deltas under the lock again; the deltas' callbacks run after the
// lock is released (so a callback may call cancel()). cancel() frees the request's KV blocks at
// once: a step in flight may still write them, but no other request can own them before the
// next schedule, which waits for that step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/kv_block_manager.h"
#include "engine/request_output.h"
#include "engine/scheduler.h"
#include "engine/step_masks.h"
#include "grammar/grammar_compiler.h"
#include "grammar/structured_output.h"
#include "runner/step_io.h"
#include "tokenizer/tokenizer.h"

namespace fg {

// One delta of a request's stream. The deltas of a request, joined, are its whole output.
struct RequestOutput {
  uint64_t id = 0;
  std::vector<int32_t> token_ids;       // the tokens generated since the previous delta
  std::string text;                     // their text (held back while it may become a stop string)
  // When the request asked for logprobs: those of the tokens that settled as part of the output
  // since the previous delta (RequestOutputProcessor's rule: they end where the text ends, and
  // may lag token_ids while text is held back). Joined over the deltas: the whole output's. A
  // cancel delivers neither the held-back text nor the logprobs waiting with it.
  std::vector<OutputLogprobs> logprobs;
  // With RequestSpec::prompt_logprobs >= 0, in the first delta only: one per prompt token after the
  // first (entry i: prompt token i + 1 given tokens 0..i).
  std::vector<TokenLogprobs> prompt_logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::optional<std::variant<int32_t, std::string>> stop_reason;
  int64_t num_prompt_tokens = 0;
  int64_t num_generated_tokens = 0;  // in all deltas so far
  int64_t num_cached_tokens = 0;     // prompt tokens the prefix cache supplied
};

struct RequestSpec {
  std::vector<int32_t> prompt;
  SamplingParams sampling;       // `step` is the engine's; `seed` is used only when has_seed
  bool has_seed = false;         // else the engine draws one
  StopConditions stop;           // eos_token_ids empty: the engine's (the model's) are used
  // OpenAI's logit_bias: each (token, bias) is added to the token's raw logit before penalties,
  // temperature and filters (logprobs stay those of the raw logits). Distinct tokens in the
  // vocabulary, finite biases in [-100, 100].
  std::vector<std::pair<int32_t, float>> logit_bias;
  // vLLM's prompt_logprobs: -1 none; k >= 0: the logprob of every prompt token after the first
  // (given the tokens before it) and, for k > 0, its top k, in the request's first delta.
  int32_t prompt_logprobs = -1;
  // vLLM's priority: with the priority scheduling policy, a lower value is scheduled first (ties
  // by arrival) and preempted last; ignored under first-come-first-served.
  int64_t priority = 0;
  // A constraint the output must match (response_format, vLLM's structured_outputs or guided_*).
  std::optional<StructuredOutput> structured_output;
  // The constraint applies after this token has been generated (a reasoning model's </think>: the
  // thinking before it is free); -1: from the first token.
  int32_t structured_output_after = -1;
  std::function<void(const RequestOutput&)> on_output;  // runs on the stepping thread
};

struct EngineOptions {
  SchedulerConfig scheduler;
  int64_t max_model_len = 0;  // prompt + max_tokens limit
  int64_t vocab_size = 0;
  std::vector<int32_t> eos_token_ids;
  uint64_t seed = 0;          // of the generator of per-request seeds
  // Compiles the requests' structured-output constraints (shared with the server, which compiles
  // each one first to refuse a bad one; the engine's compile is a cache hit). Null: constrained
  // requests are refused. Must outlive the engine.
  GrammarCompiler* grammar = nullptr;
  // The worker pool that fills a step's masks across requests. 1 (on the stepping thread) measured
  // fastest at 64 requests of a large JSON schema, whose fill is ~2 us a row (bench/RESULTS.md);
  // more threads pay when a grammar's fill costs more than waking them.
  int grammar_threads = 1;
};

struct EngineStats {
  int64_t steps = 0;
  int64_t graph_steps = 0;
  int64_t eager_steps = 0;
  int64_t scheduled_requests = 0;  // sum over steps of the requests in the step
  int64_t prompt_tokens = 0;       // of submitted requests
  int64_t generated_tokens = 0;
  int64_t finished_requests = 0;
  int64_t cancelled_requests = 0;
};

// Engine::gauges: what the engine holds at one moment.
struct EngineGauges {
  int64_t running = 0, waiting = 0, preemptions = 0;
  int64_t free_blocks = 0;    // free plus evictable cached blocks: what can be handed out now
  int64_t usable_blocks = 0;  // all blocks but the null block
  double usage = 0.0;         // 1 - free / usable
  int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;
};

class Engine {
 public:
  // `tokenizer` may be null (no text, no stop strings). executor and kv must outlive the engine.
  Engine(StepExecutor& executor, KvBlockManager& kv, const Tokenizer* tokenizer, EngineOptions options);
  ~Engine();

  // Validates the request and queues it; throws fg::Error naming the problem (an empty prompt,
  // an id outside the vocabulary, prompt + max_tokens past max_model_len, a request whose KV
  // could never fit in the cache, a bad sampling or stop parameter). Returns the request id.
  uint64_t submit(RequestSpec spec);
  // Finishes the request with reason "abort" and frees its blocks now. False for unknown or
  // already finished ids.
  bool cancel(uint64_t id);
  // Cancels every unfinished request (each stream ends with reason "abort").
  void cancel_all();

  // Runs one step; false when no request was waiting or running.
  bool step();
  bool has_unfinished() const;
  size_t num_running() const;
  size_t num_waiting() const;
  EngineStats stats() const;
  int64_t num_preemptions() const;
  // The scheduler's and the KV cache's numbers, read together under the engine's lock: another
  // thread (the server's /metrics) gets one moment's, in which a finished or cancelled request's
  // blocks are free as soon as it has left the running set.
  EngineGauges gauges() const;
  // Not thread-safe: for the thread that steps the engine, or after it stopped.
  const KvBlockManager& kv() const { return kv_; }

 private:
  struct Request;
  // Before a step: the prompt logprobs of the prompt positions its chunks prefill, for the requests
  // that asked (StepExecutor::prompt_logprobs), outside the lock.
  void score_prompts(const SchedulerOutput& plan, const std::vector<std::shared_ptr<Request>>& in_flight,
                     const std::vector<std::vector<int32_t>>& block_ids);
  // For a step: points the ScheduledRequest of each chunk in `constrained` (indices into the step)
  // at its request's mask row, sized, and returns what fills those rows from the requests' grammar
  // matchers (on the worker pool), for the executor to call while the step's forward runs; empty
  // when no chunk is constrained.
  std::function<void()> mask_filler(const std::vector<std::shared_ptr<Request>>& in_flight,
                                    const std::vector<size_t>& constrained, std::vector<ScheduledRequest>& scheduled);
  // Throws naming the token: ids outside the vocabulary, non-finite or out-of-range biases, repeats.
  void validate_logit_bias(const std::vector<std::pair<int32_t, float>>& bias) const;
  // Appends the sampled token to a request whose step reached the end of its tokens; returns the
  // delta to stream (finished when a stop condition hit).
  RequestOutput accept_token(Request& request, int32_t token, const TokenLogprobs* logprobs);
  // Marks it finished, frees its blocks and forgets it (callers hold a reference).
  void finish(Request& request);
  RequestOutput delta_of(const Request& request) const;

  StepExecutor& executor_;
  KvBlockManager& kv_;
  const Tokenizer* tokenizer_;
  EngineOptions options_;
  mutable std::mutex mutex_;
  Scheduler scheduler_;
  std::unordered_map<uint64_t, std::shared_ptr<Request>> requests_;  // unfinished ones
  uint64_t next_id_ = 1;
  int64_t next_arrival_ = 0;
  std::mt19937_64 seed_generator_;
  EngineStats stats_;
  std::unique_ptr<StepMaskFiller> masks_;  // with options_.grammar
};

}  // namespace fg
