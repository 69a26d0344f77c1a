// engine/step_masks.h — the token masks of a step's constrained requests (issue: structured
// outputs), filled before the step runs, in parallel across requests on a small worker pool.
//
// A request's next mask depends on the token its previous step sampled, so it cannot be computed
// ahead of that step; what can run side by side are the requests of one step, each on its own
// grammar matcher (matchers of distinct requests share nothing but their compiled grammar, which
// they only read). A step with one constrained request, or a pool of one thread, fills on the
// calling thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "grammar/grammar_matcher.h"

namespace fg {

class StepMaskFiller {
 public:
  explicit StepMaskFiller(int threads);

  // rows[i] = matchers[i]'s mask of the tokens allowed next (resized to its bitmask_words).
  void fill(std::span<GrammarMatcher* const> matchers, std::span<std::vector<int32_t>* const> rows);

 private:
  ThreadPool pool_;
};

}  // namespace fg
