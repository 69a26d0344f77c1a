// runner/step_staging.h — writing one scheduled step into host staging memory: the real rows
// from the scheduled requests, and every padded row exactly as the attention backend's padding
// contract declares (DESIGN.md, "The core contract", point 4). Padded rows sample neutrally:
// greedy, no penalties (empty penalty lists), no logprobs.
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
  // The request's whole prompt and every token it has generated so far: the P and c_t of the
  // penalties (sampling_params.h, item 0). Read only when sampling.has_penalties(); the prompt
  // only when repetition_penalty != 1.
  std::span<const int32_t> prompt_ids;
  std::span<const int32_t> output_ids;
};

struct StepShape {
  int64_t num_tokens = 0;  // real
  int64_t num_reqs = 0;    // real
  bool uniform_decode = false;  // every request runs exactly one token
};
StepShape step_shape(const std::vector<ScheduledRequest>& requests);

// Reusable host memory for building penalty lists (the runner keeps one): per token id, its output
// count and the list that last saw it, so a request's list costs O(prompt + output) with no
// clearing and no sort. Grows to the largest token id seen.
class PenaltyListBuilder {
 public:
  // Collects the distinct tokens of output_ids, with their counts, then, when with_prompt, those of
  // prompt_ids not in the output, with count 0. Returns the list's length; `request` names the
  // request in errors (negative or impossibly large token ids).
  int64_t collect(std::span<const int32_t> prompt_ids, std::span<const int32_t> output_ids, bool with_prompt,
                  int64_t request);
  // The collected list as (token, count) pairs: entries[2 * i], entries[2 * i + 1].
  void write(int32_t* entries) const;

 private:
  void touch(int32_t token, const char* field, int64_t index, int64_t request);

  std::vector<uint32_t> seen_;   // [max id + 1]: the list that last saw the token
  std::vector<int32_t> count_;   // [max id + 1]: its output count in that list
  std::vector<int32_t> order_;   // this list's tokens, in first-seen order
  uint32_t list_ = 0;
};

// What stage_step wrote beyond the layout's fixed fields.
struct StagedStep {
  int64_t penalty_entries = 0;  // list entries used (all rows)
  bool any_logprobs = false;    // some real row has num_logprobs >= 0
  size_t copy_bytes = 0;        // layout.copy_bytes(penalty_entries): the one copy to make
};

// Stages `requests` into `base` laid out by `layout` (whose padded sizes hold them); rows past
// the real ones get the contract's fill values. Throws if a request does not fit the layout, naming
// RunnerOptions::max_penalty_entries when the penalty lists do not fit its capacity. `builder` may
// be null (a temporary one is used).
StagedStep stage_step(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                      const PaddingContract& contract, int64_t block_size, void* base,
                      PenaltyListBuilder* builder = nullptr);

}  // namespace fg
