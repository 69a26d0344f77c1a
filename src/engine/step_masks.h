// engine/step_masks.h — the token masks of a step's constrained requests, filled while the step's
// forward runs (StepExecutor::execute), in parallel across requests on a small worker pool.
//
// A request's next mask depends on the token its previous step sampled, so it cannot be computed
// before that step ends; what can run beside it is the next step's forward, which needs the token
// but not the mask, and the requests of one step side by side, each on its own grammar matcher
// (matchers of distinct requests share nothing but their compiled grammar, which they only read).
// A step with one constrained request, or a pool of one thread, fills on the calling thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "grammar/grammar_matcher.h"

namespace fg {

// One constrained request of a step: its matcher, the token its previous step sampled that the
// matcher has not taken yet (-1: none), and its mask row.
struct MaskFill {
  GrammarMatcher* matcher = nullptr;
  int32_t* pending = nullptr;
  std::vector<int32_t>* row = nullptr;
};

class StepMaskFiller {
 public:
  explicit StepMaskFiller(int threads);

  // For each request: the matcher takes its pending token (then none is pending), and the row
  // becomes the mask of the tokens allowed next (resized to bitmask_words). The pending token was
  // sampled under the matcher's previous mask, which is exact, so the matcher takes it; should it
  // not, the row allows the EOS ids alone (the request ends at its next token) and a warning says so.
  void fill(std::span<const MaskFill> requests);

 private:
  ThreadPool pool_;
};

}  // namespace fg
