// engine/step_masks.cpp — see step_masks.h.
#include "engine/step_masks.h"

#include "core/error.h"

namespace fg {

StepMaskFiller::StepMaskFiller(int threads) : pool_(threads) {}

void StepMaskFiller::fill(std::span<GrammarMatcher* const> matchers, std::span<std::vector<int32_t>* const> rows) {
  FG_CHECK(matchers.size() == rows.size(), "step masks: {} matchers for {} rows", matchers.size(), rows.size());
  const auto fill_range = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::vector<int32_t>& row = *rows[static_cast<size_t>(i)];
      GrammarMatcher& matcher = *matchers[static_cast<size_t>(i)];
      row.resize(static_cast<size_t>(bitmask_words(matcher.vocab_size())));
      matcher.fill_next_token_bitmask(row.data());
    }
  };
  const int64_t n = static_cast<int64_t>(matchers.size());
  if (n <= 1)
    fill_range(0, n);
  else
    pool_.parallel_for(n, fill_range);
}

}  // namespace fg
