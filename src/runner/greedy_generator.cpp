// runner/greedy_generator.cpp — prefill, then token-by-token greedy decode.
#include "runner/greedy_generator.h"

#include <algorithm>
#include <numeric>

#include "runner/step_builder.h"

namespace fg {

namespace {

bool is_stop(const std::vector<int32_t>& stop_ids, int32_t token) {
  return std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end();
}

}  // namespace

int32_t argmax_lowest_index(const float* values, int64_t n) {
  FG_ASSERT(n > 0);
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (values[i] > values[best]) best = i;
  return static_cast<int32_t>(best);
}

GreedyResult generate_greedy(LlamaModel& model, const KvCache& kv, const std::vector<int32_t>& prompt,
                             int64_t max_tokens, bool keep_logits, const std::vector<int32_t>& stop_ids) {
  const ModelConfig& c = model.config();
  const int64_t T = static_cast<int64_t>(prompt.size()), V = c.vocab_size;
  FG_CHECK(T >= 1, "the prompt is empty");
  FG_CHECK(max_tokens >= 0, "max_tokens must be non-negative, got {}", max_tokens);
  FG_CHECK(T + max_tokens <= c.max_position_embeddings,
           "prompt of {} tokens + {} new tokens exceeds the model's context length {}", T, max_tokens,
           c.max_position_embeddings);
  FG_CHECK(T <= model.max_tokens(), "the prompt of {} tokens exceeds the model's step size {}", T, model.max_tokens());
  if (keep_logits) FG_CHECK(T <= model.max_logits(), "keeping {} prompt logits rows needs max_logits >= {}", T, T);

  const int64_t blocks_needed = (T + max_tokens + kv.block_size - 1) / kv.block_size;
  FG_CHECK(blocks_needed + 1 <= kv.num_blocks, "{} tokens need {} KV blocks of {} but the cache has {} (+ null)",
           T + max_tokens, blocks_needed, kv.block_size, kv.num_blocks - 1);
  std::vector<int32_t> blocks(static_cast<size_t>(blocks_needed));
  std::iota(blocks.begin(), blocks.end(), 1);  // block 0 is the null block

  GreedyResult result;
  Backend& backend = model.backend();
  std::vector<float> row(static_cast<size_t>(V));
  // The tokens of the request so far; each step runs the ones after `computed`.
  std::vector<int32_t> tokens = prompt;
  int64_t computed = 0;
  const auto step_request = [&](bool all_logits) {
    ScheduledRequest r;
    r.token_ids = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed));
    r.num_computed = computed;
    r.block_ids = blocks;
    r.all_logits = all_logits;
    return r;
  };
  for (int64_t step = 0; step < max_tokens; ++step) {
    DeviceStep d = upload_step(backend, {step_request(keep_logits && step == 0)}, kv.block_size, blocks_needed);
    Tensor logits = model.forward(d.views.inputs, kv);
    const int64_t rows = logits.dim(0);
    if (keep_logits && step == 0) {
      result.prompt_logits.resize(static_cast<size_t>(rows * V));
      backend.copy_to_host(result.prompt_logits.data(), logits);
      std::copy_n(result.prompt_logits.end() - V, V, row.begin());
    } else {
      backend.copy_to_host(row.data(), logits.rows(rows - 1, 1));
    }
    const int32_t token = argmax_lowest_index(row.data(), V);
    result.generated.push_back(token);
    if (keep_logits) result.generated_logits.insert(result.generated_logits.end(), row.begin(), row.end());
    computed = static_cast<int64_t>(tokens.size());
    tokens.push_back(token);
    if (is_stop(stop_ids, token)) break;
  }
  if (keep_logits && max_tokens == 0) {
    DeviceStep d = upload_step(backend, {step_request(true)}, kv.block_size, blocks_needed);
    Tensor logits = model.forward(d.views.inputs, kv);
    result.prompt_logits.resize(static_cast<size_t>(logits.dim(0) * V));
    backend.copy_to_host(result.prompt_logits.data(), logits);
  }
  return result;
}

std::vector<int32_t> generate_greedy_with_runner(StepExecutor& runner, const KvCache& kv,
                                                 const std::vector<int32_t>& prompt, int64_t max_tokens,
                                                 int64_t chunk, const std::function<void(int32_t)>& on_token,
                                                 const std::vector<int32_t>& stop_ids) {
  const int64_t T = static_cast<int64_t>(prompt.size());
  FG_CHECK(T >= 1 && chunk >= 1, "the prompt is empty");
  const int64_t blocks_needed = (T + max_tokens + kv.block_size - 1) / kv.block_size;
  FG_CHECK(blocks_needed + 1 <= kv.num_blocks, "{} tokens need {} KV blocks of {} but the cache has {} (+ null)",
           T + max_tokens, blocks_needed, kv.block_size, kv.num_blocks - 1);
  std::vector<int32_t> blocks(static_cast<size_t>(blocks_needed));
  std::iota(blocks.begin(), blocks.end(), 1);

  std::vector<int32_t> tokens = prompt;
  std::vector<int32_t> generated;
  int64_t computed = 0;
  while (static_cast<int64_t>(generated.size()) < max_tokens) {
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(tokens.size()) - computed, chunk);
    ScheduledRequest request;
    request.token_ids = std::span<const int32_t>(tokens.data() + computed, static_cast<size_t>(n));
    request.num_computed = computed;
    request.block_ids = blocks;
    request.sampling.step = static_cast<int64_t>(generated.size());
    const StepResult result = runner.execute({request});
    computed += n;
    if (computed < static_cast<int64_t>(tokens.size())) continue;  // more of the prompt to prefill
    generated.push_back(result.sampled[0]);
    tokens.push_back(result.sampled[0]);
    if (on_token) on_token(result.sampled[0]);
    if (is_stop(stop_ids, result.sampled[0])) break;
  }
  return generated;
}

}  // namespace fg
