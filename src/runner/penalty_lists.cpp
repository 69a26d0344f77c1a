// runner/penalty_lists.cpp — distinct tokens and their output counts, by generation stamps.
#include "runner/penalty_lists.h"

#include <algorithm>

#include "core/error.h"
#include "sampling/sampling_params.h"

namespace fg {

void PenaltyListBuilder::touch(int32_t token, const char* field_name, int64_t index, int64_t request) {
  FG_CHECK(token >= 0 && token < kMaxSamplingVocab, "request {} of the step has {}[{}] = {}, not a token id", request,
           field_name, index, token);
  if (static_cast<size_t>(token) >= seen_.size()) {
    const size_t size = std::max<size_t>(static_cast<size_t>(token) + 1, seen_.size() * 2);
    seen_.resize(size, 0);
    count_.resize(size, 0);
  }
  if (seen_[token] != list_) {
    seen_[token] = list_;
    count_[token] = 0;
    order_.push_back(token);
  }
}

int64_t PenaltyListBuilder::collect(std::span<const int32_t> prompt_ids, std::span<const int32_t> output_ids,
                                    bool with_prompt, int64_t request) {
  if (++list_ == 0) {  // the stamps wrapped: forget them all
    std::fill(seen_.begin(), seen_.end(), 0);
    list_ = 1;
  }
  order_.clear();
  for (size_t i = 0; i < output_ids.size(); ++i) {
    touch(output_ids[i], "output_ids", static_cast<int64_t>(i), request);
    ++count_[output_ids[i]];
  }
  if (with_prompt)
    for (size_t i = 0; i < prompt_ids.size(); ++i) touch(prompt_ids[i], "prompt_ids", static_cast<int64_t>(i), request);
  return static_cast<int64_t>(order_.size());
}

void PenaltyListBuilder::write(int32_t* entries) const {
  for (size_t i = 0; i < order_.size(); ++i) {
    entries[2 * i] = order_[i];
    entries[2 * i + 1] = count_[order_[i]];
  }
}

}  // namespace fg
