// grammar/grammar_matcher.cpp — see grammar_matcher.h.
#include "grammar/grammar_matcher.h"

#include <dlpack/dlpack.h>
#include <xgrammar/matcher.h>

#include "core/error.h"
#include "grammar/compiled_grammar.h"
#include "grammar/xgrammar_log.h"

namespace fg {

struct GrammarMatcher::Impl {
  explicit Impl(std::shared_ptr<const CompiledGrammar> g)
      : grammar(std::move(g)), matcher(grammar->grammar(), std::nullopt, /*terminate_without_stop_token=*/false) {}

  std::shared_ptr<const CompiledGrammar> grammar;
  xgrammar::GrammarMatcher matcher;
  int64_t accepted = 0;  // tokens accepted since the start or the last reset: what rollback may undo
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar) {
  FG_CHECK(grammar != nullptr, "grammar matcher: no compiled grammar");
  impl_ = std::make_unique<Impl>(std::move(grammar));
}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

bool GrammarMatcher::accept_token(int32_t id) {
  const GrammarTokenFacts& tokens = impl_->grammar->tokens();
  // What xgrammar would refuse with a warning line (its log is ours: a line per refused token)
  // is refused here quietly.
  if (id < 0 || id >= tokens.vocab_size || impl_->matcher.IsTerminated()) return false;
  const auto i = static_cast<size_t>(id);
  if (tokens.never_text[i] && !tokens.is_stop[i]) return false;
  if (!impl_->matcher.AcceptToken(id)) return false;
  ++impl_->accepted;
  return true;
}

void GrammarMatcher::fill_next_token_bitmask(int32_t* row) {
  FG_CHECK(!impl_->matcher.IsTerminated(), "grammar matcher: the output is complete; no token may follow the EOS");
  int64_t shape[1] = {bitmask_words(vocab_size())};
  DLTensor tensor{};
  tensor.data = row;
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = 1;
  tensor.dtype = DLDataType{kDLInt, 32, 1};
  tensor.shape = shape;
  tensor.strides = nullptr;
  tensor.byte_offset = 0;
  impl_->matcher.FillNextTokenBitmask(&tensor);
}

bool GrammarMatcher::is_terminated() const { return impl_->matcher.IsTerminated(); }

bool GrammarMatcher::is_stop_token(int32_t id) const {
  const GrammarTokenFacts& tokens = impl_->grammar->tokens();
  return id >= 0 && id < tokens.vocab_size && tokens.is_stop[static_cast<size_t>(id)];
}

void GrammarMatcher::rollback(int num_tokens) {
  FG_CHECK(num_tokens >= 0 && num_tokens <= impl_->accepted,
           "grammar matcher: cannot roll back {} tokens; {} were accepted", num_tokens, impl_->accepted);
  if (num_tokens == 0) return;
  impl_->matcher.Rollback(num_tokens);
  impl_->accepted -= num_tokens;
}

void GrammarMatcher::reset() {
  impl_->matcher.Reset();
  impl_->accepted = 0;
}

int64_t GrammarMatcher::vocab_size() const { return impl_->grammar->vocab_size(); }

}  // namespace fg
