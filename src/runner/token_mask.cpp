// runner/token_mask.cpp — the rows of the token-mask buffer a step writes, and their runs.
#include "runner/token_mask.h"

#include <algorithm>

#include "core/error.h"

namespace fg {

TokenMaskRows::TokenMaskRows(int64_t rows, int64_t words)
    : rows_(rows), words_(words), constrained_(static_cast<size_t>(rows), 0), changed_(static_cast<size_t>(rows), 0) {
  FG_CHECK(rows >= 0 && words >= 1, "token mask: {} rows of {} words", rows, words);
}

std::vector<TokenMaskRows::Run> TokenMaskRows::stage(const std::vector<ScheduledRequest>& requests,
                                                     int32_t* mirror) {
  const int64_t n = static_cast<int64_t>(requests.size());
  FG_CHECK(n <= rows_, "token mask: a step of {} requests, the buffer holds {} rows", n, rows_);
  for (int64_t r = 0; r < n; ++r) {
    const size_t size = requests[static_cast<size_t>(r)].token_mask.size();
    FG_CHECK(size == 0 || static_cast<int64_t>(size) == words_,
             "request {} of the step carries a token mask of {} words; the vocabulary needs {} (ceil(V / 32))", r,
             size, words_);
  }
  std::fill(changed_.begin(), changed_.end(), uint8_t{0});
  for (int64_t r = 0; r < rows_; ++r) {
    const bool now = r < n && !requests[static_cast<size_t>(r)].token_mask.empty();
    int32_t* row = mirror + r * words_;
    if (now) {
      const auto& mask = requests[static_cast<size_t>(r)].token_mask;
      std::copy(mask.begin(), mask.end(), row);
    } else if (constrained_[static_cast<size_t>(r)] != 0) {
      std::fill(row, row + words_, int32_t{-1});  // back to all ones
    }
    changed_[static_cast<size_t>(r)] = now || constrained_[static_cast<size_t>(r)] != 0;
    constrained_[static_cast<size_t>(r)] = now;
  }
  std::vector<Run> runs;
  for (int64_t r = 0; r < rows_; ++r) {
    if (changed_[static_cast<size_t>(r)] == 0) continue;
    if (!runs.empty() && runs.back().first + runs.back().count == r) {
      ++runs.back().count;
    } else {
      runs.push_back({r, 1});
    }
  }
  return runs;
}

}  // namespace fg
