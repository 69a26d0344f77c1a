// runner/penalty_lists.h — building a step's penalty lists on the host (sampling_params.h, item 0):
// per request with penalties, its distinct output tokens with their counts, then its prompt's other
// tokens with count 0 when the repetition penalty reads the prompt.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fg {

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

}  // namespace fg
