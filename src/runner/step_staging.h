// runner/step_staging.h — writing one scheduled step into host staging memory: the real rows
// from the scheduled requests, and every padded row exactly as the attention backend's padding
// contract declares (DESIGN.md, "The core contract", point 4).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "attention/attention_contract.h"
#include "runner/step_layout.h"
#include "sampling/sampling_params.h"

namespace fg {


// One request's part of a step: `token_ids` run on top of `num_computed` tokens already in its
// KV blocks; the step samples one token from the logits of its last token.
struct ScheduledRequest {
  std::span<const int32_t> token_ids;
  int64_t num_computed = 0;
  std::span<const int32_t> block_ids;  // covers num_computed + token_ids.size() tokens
  SamplingParams sampling;  // step = the index of the token being generated
};

struct StepShape {
  int64_t num_tokens = 0;  // real
  int64_t num_reqs = 0;    // real
  bool uniform_decode = false;  // every request runs exactly one token
};
StepShape step_shape(const std::vector<ScheduledRequest>& requests);

// Stages `requests` into `base` laid out by `layout` (whose padded sizes hold them); rows past
// the real ones get the contract's fill values. Throws if a request does not fit the layout.
void stage_step(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                const PaddingContract& contract, int64_t block_size, void* base);

}  // namespace fg
