// runner/greedy_generator.h — greedy generation of one request through the paged KV cache:
// one prefill step over the prompt, then one decode step per token. The scheduler-driven engine
// supersedes this for many requests; this is the reference path the CLI and tests use.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/llama_model.h"
#include "runner/model_runner.h"

namespace fg {

// Index of the largest value; ties go to the lowest index (as torch.argmax does).
int32_t argmax_lowest_index(const float* values, int64_t n);

struct GreedyResult {
  std::vector<int32_t> generated;        // [N]
  std::vector<float> prompt_logits;      // [T, V] when kept: the logits at every prompt position
  std::vector<float> generated_logits;   // [N, V] when kept: row i is what generated[i] was taken from
};

// Runs prompt + max_tokens tokens in KV blocks 1, 2, ... of `kv`. keep_logits also returns the
// logits (prompt_logits then needs the model built with max_logits >= prompt length).
// Generation ends early after a token of `stop_ids` (the model's EOS ids), which is returned last.
GreedyResult generate_greedy(LlamaModel& model, const KvCache& kv, const std::vector<int32_t>& prompt,
                             int64_t max_tokens, bool keep_logits, const std::vector<int32_t>& stop_ids = {});

// The same greedy generation through a step executor (the full-graph runner, or the tensor-parallel
// one over its ranks): the prompt in chunks of at most
// `chunk` tokens, then one step per token, each a graph replay where a bucket holds it. Only the
// sampled ids come back. Uses KV blocks 1, 2, ... of `kv`.
// `on_token`, when set, sees each token as soon as it is sampled (for streaming), a stop id too.
// Generation ends early after a token of `stop_ids`, as generate_greedy's does.
std::vector<int32_t> generate_greedy_with_runner(StepExecutor& runner, const KvCache& kv,
                                                 const std::vector<int32_t>& prompt, int64_t max_tokens,
                                                 int64_t chunk,
                                                 const std::function<void(int32_t)>& on_token = {},
                                                 const std::vector<int32_t>& stop_ids = {});

}  // namespace fg
