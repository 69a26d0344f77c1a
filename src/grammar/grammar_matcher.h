// grammar/grammar_matcher.h — one constrained request's place in its grammar: which tokens may
// come next (as a bitmask row for the sampler), and the tokens it has accepted.
//
// Thread-safety: a matcher is not synchronized. One thread at a time may use it; the engine may
// hand it to a worker thread to fill the next mask while the GPU runs the step, as long as no
// other thread touches it until that is done. Distinct matchers may be used on distinct threads
// at once, including matchers of the same compiled grammar (which they only read).
//
// The mask's layout is xgrammar's (and the step's mask buffer's): a row of
// bitmask_words(vocab_size) int32 words, token i allowed iff bit i % 32 of word i / 32 is set.
// Bits of ids past the vocabulary (the last word's tail) are clear.
#pragma once

#include <cstdint>
#include <memory>

namespace fg {

class CompiledGrammar;

// int32 words of one mask row: ceil(vocab_size / 32).
constexpr int64_t bitmask_words(int64_t vocab_size) { return (vocab_size + 31) / 32; }

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  // Moves past `id` when the grammar allows it next and returns true; otherwise returns false and
  // stays where it was. An EOS id is allowed where the grammar may end, and terminates the
  // matcher; after that nothing is accepted. Ids outside the vocabulary are refused.
  bool accept_token(int32_t id);

  // Writes the tokens allowed next into `row` (bitmask_words(vocab_size()) words). Where the
  // grammar may end, the EOS ids are allowed; where it must end, only they are. Must not be
  // called once terminated (fg::Error).
  void fill_next_token_bitmask(int32_t* row);

  // Whether an EOS id has been accepted (the output is complete).
  bool is_terminated() const;
  // Whether `id` is one of the EOS ids: where a mask allows it, accepting it terminates the matcher.
  bool is_stop_token(int32_t id) const;

  // Undoes the last `num_tokens` accepted tokens (at most the number accepted since the start or
  // the last reset), the EOS included. Cheap: xgrammar keeps each token's state.
  void rollback(int num_tokens);
  // Back to the start of the grammar.
  void reset();

  int64_t vocab_size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fg
