// runner/step_io.h — what one engine step takes and gives back, and the interface of whatever runs
// it. The engine and the server see only this file of the runner: no model, no op set, no backend.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "core/error.h"
#include "runner/buckets.h"
#include "sampling/sampling_params.h"

namespace fg {

// One request's part of a step: `token_ids` run on top of `num_computed` tokens already in its
// KV blocks; the step samples one token from the logits of its last token.
struct ScheduledRequest {
  std::span<const int32_t> token_ids;
  int64_t num_computed = 0;
  std::span<const int32_t> block_ids;  // covers num_computed + token_ids.size() tokens
  SamplingParams sampling;  // step = the index of the token being generated
  // The request's whole prompt and every token it has generated so far: the P and c_t of the
  // penalties (sampling_params.h, item 0). Read only when sampling.has_penalties(); the prompt
  // only when repetition_penalty != 1.
  std::span<const int32_t> prompt_ids;
  std::span<const int32_t> output_ids;
  // The request's logit bias (sampling_params.h, item 0): distinct tokens, finite biases in
  // [-kMaxAbsLogitBias, kMaxAbsLogitBias].
  std::span<const std::pair<int32_t, float>> logit_bias;
  // The request's token bitmask for this step (sampling_params.h, item 0): ceil(V / 32) words,
  // token t allowed when bit t % 32 of word t / 32 is set (xgrammar's layout); V = the model's
  // vocabulary (logits columns). Empty: unconstrained. Staged into the runner's persistent mask
  // buffer (runner/token_mask.h), never into the one staged block. Its words may be written until
  // the executor's fill_masks returns (StepExecutor::execute), never after.
  std::span<const int32_t> token_mask;
  // Logits for every query token, not only the last: for reference runs that read the model's
  // logits at every position (upload_step); a sampled step takes one row per request.
  bool all_logits = false;
};

// Logprobs of one request's sampled token (sampling_params.h, item 4).
struct TokenLogprobs {
  float logprob = std::numeric_limits<float>::quiet_NaN();  // of the sampled token
  // The num_logprobs most likely tokens (at most the vocabulary), most likely first, ties toward
  // the lower id: (token id, logprob).
  std::vector<std::pair<int32_t, float>> top;
  // Prompt logprobs only (vLLM's "rank"): 1 + the number of tokens whose logit is above the scored
  // token's. 0 where not computed (generated tokens: OpenAI's formats have no rank).
  int64_t rank = 0;
};

struct StepResult {
  std::vector<int32_t> sampled;  // one id per scheduled request
  bool replayed = false;         // a graph replay, or eager
  Bucket bucket;                 // the padded shape it ran with (eager: the real shape)
  // One entry per scheduled request when some request of the step has num_logprobs >= 0, else
  // empty; entries of requests with num_logprobs = -1 stay default.
  std::vector<TokenLogprobs> logprobs;
};

// What the engine needs from whatever runs a step: the scheduled requests in, one sampled token
// (and logprobs when asked) per request out. The full-graph ModelRunner is the real one; tests
// substitute executors that model a KV cache without a model.
class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  virtual StepResult execute(const std::vector<ScheduledRequest>& requests) = 0;
  // The same step, whose constrained requests' token_mask words `fill_masks` writes (the spans are
  // sized already). The executor calls it once, as late as it can: after it launched the step where
  // the device runs behind the host, so that the masks are computed while the forward runs, and
  // before it launches the step otherwise.
  virtual StepResult execute(const std::vector<ScheduledRequest>& requests, const std::function<void()>& fill_masks) {
    if (fill_masks) fill_masks();
    return execute(requests);
  }
  // vLLM's prompt_logprobs: entry i is the raw logprob of tokens[first + 1 + i] given the tokens
  // before it, with the top k (sampling_params.h, item 4), for i in [0, last - first). An eager pass
  // over tokens [first, last), whose KV lands in `block_ids` (the request's), where the step that
  // prefills those tokens writes it again; so it may run just before that step. Executors without
  // a model cannot.
  virtual std::vector<TokenLogprobs> prompt_logprobs(std::span<const int32_t> tokens, int64_t first, int64_t last,
                                                     std::span<const int32_t> block_ids, int32_t k) {
    (void)tokens, (void)first, (void)last, (void)block_ids, (void)k;
    fail("prompt logprobs need a model; this executor has none");
  }
};

}  // namespace fg
