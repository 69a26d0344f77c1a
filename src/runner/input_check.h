// runner/input_check.h — checked mode (--check-graph-inputs): the staged host metadata of a step
// validated against the attention backend's contract before every replay (DESIGN.md point 6).
// A violation stops the step with the field, the index, the value and the value expected. The
// padded region is checked field by field against the step table (step_fields.h), exactly as the
// builder fills it. Beside the attention metadata of the real rows it checks what the sampling ops
// trust: penalty values and logprob counts in range, and penalty lists with non-decreasing offsets
// within the capacity, distinct in-vocabulary tokens per row, and empty lists for requests without
// penalties. Given the token-mask buffer's host mirror (runner/token_mask.h), it checks that rows
// too: padded rows and unconstrained requests' rows all ones, constrained rows allowing some token.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention_contract.h"
#include "runner/step_layout.h"

namespace fg {

struct InputCheckLimits {
  int64_t vocab_size = 0;
  int64_t max_positions = 0;  // positions must be < this (the RoPE table)
  int64_t num_blocks = 0;     // of the KV cache, block 0 included
  int64_t block_size = 0;
};

// The token-mask rows a step reads, as the host mirror holds them.
struct TokenMaskCheck {
  const int32_t* mirror = nullptr;  // [>= layout.num_reqs, layout.mask_words]
  std::vector<bool> constrained;    // [num_reqs]: the real request carries a mask
};

// `base` is the staging memory of a step laid out by `layout`, holding `num_tokens` real tokens
// over `num_reqs` real requests, one logits row each; `mask`, when given, the mask rows it reads.
// Throws fg::Error on the first violation.
void check_step_inputs(const StepLayout& layout, const void* base, int64_t num_tokens, int64_t num_reqs,
                       bool uniform_decode, const PaddingContract& contract, const InputCheckLimits& limits,
                       const TokenMaskCheck* mask = nullptr);

}  // namespace fg
