// engine/step_masks.cpp — see step_masks.h.
#include "engine/step_masks.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace fg {

namespace {

void fill_one(const MaskFill& f) {
  GrammarMatcher& matcher = *f.matcher;
  std::vector<int32_t>& row = *f.row;
  row.resize(static_cast<size_t>(bitmask_words(matcher.vocab_size())));
  const int32_t pending = std::exchange(*f.pending, -1);
  if (pending >= 0 && !matcher.accept_token(pending)) {
    log::warning("grammar: the matcher refuses token {}, which its own mask allowed; only EOS may follow", pending);
    std::fill(row.begin(), row.end(), 0);
    for (int64_t id = 0; id < matcher.vocab_size(); ++id)
      if (matcher.is_stop_token(static_cast<int32_t>(id))) row[static_cast<size_t>(id >> 5)] |= int32_t{1} << (id & 31);
    return;
  }
  matcher.fill_next_token_bitmask(row.data());
}

}  // namespace

StepMaskFiller::StepMaskFiller(int threads) : pool_(threads) {}

void StepMaskFiller::fill(std::span<const MaskFill> requests) {
  const auto fill_range = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fill_one(requests[static_cast<size_t>(i)]);
  };
  const int64_t n = static_cast<int64_t>(requests.size());
  if (n <= 1)
    fill_range(0, n);
  else
    pool_.parallel_for(n, fill_range);
}

}  // namespace fg
