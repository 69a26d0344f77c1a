// engine/request_output.cpp — stop conditions and streamed text of one request (see the header).
//
// Why the stop-string search only looks at held_: held_ always keeps the longest suffix of the
// unstreamed text that is a proper prefix of some stop string. So every position before it (the
// streamed text) starts no proper prefix of a stop string, and no extension of that text can make a
// stop string start there; a complete stop string starting there would have ended the request, or
// ended before min_tokens and is not a match (vLLM also only accepts matches ending in text checked
// after min_tokens). A match therefore always starts inside held_, and cutting the output at it
// never takes back streamed text.
#include "engine/request_output.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace fg {

namespace {

bool contains(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kNone: break;
  }
  return nullptr;
}

void validate_stop_conditions(const StopConditions& c) {
  FG_CHECK(c.max_tokens >= 1, "max_tokens must be at least 1, got {}", c.max_tokens);
  FG_CHECK(c.min_tokens >= 0 && c.min_tokens <= c.max_tokens,
           "min_tokens must be between 0 and max_tokens ({}), got {}", c.max_tokens, c.min_tokens);
  for (size_t i = 0; i < c.stop.size(); ++i) {
    FG_CHECK(!c.stop[i].empty(), "stop[{}] is an empty string", i);
    FG_CHECK(utf8::is_valid(c.stop[i]), "stop[{}] is not valid UTF-8", i);
  }
}

RequestOutputProcessor::RequestOutputProcessor(const Tokenizer* tokenizer, StopConditions conditions)
    : conditions_(std::move(conditions)), tokenizer_(tokenizer) {
  validate_stop_conditions(conditions_);
  FG_CHECK(tokenizer != nullptr || conditions_.stop.empty(),
           "stop strings need a tokenizer to match against, and this request has none");
  if (tokenizer) detok_ = std::make_unique<IncrementalDetokenizer>(*tokenizer, conditions_.skip_special_tokens);
}

// The brief's rule and vLLM's scheduler check_stop: the token that brings the count to min_tokens
// may stop. vLLM's observable behaviour is one token later (its MinTokensLogitsProcessor masks EOS
// and stop ids while fewer than min_tokens were generated before the step, and its detokenizer
// checks stop strings only when len(output) > min_tokens); change this line to follow it.
bool RequestOutputProcessor::may_stop() const { return num_generated_ >= conditions_.min_tokens; }

bool RequestOutputProcessor::absorb(const std::string& fresh, bool check) {
  const size_t old_size = held_.size();
  held_ += fresh;
  if (!check || fresh.empty()) return false;
  // Only matches that end in the fresh text are new (older ones were ruled out, or ended before
  // min_tokens); a match may start in the older held text.
  const std::string* best = nullptr;
  size_t best_pos = std::string::npos;
  for (const std::string& s : conditions_.stop) {
    const size_t from = old_size + 1 > s.size() ? old_size + 1 - s.size() : 0;
    const size_t pos = held_.find(s, from);
    if (pos == std::string::npos) continue;
    // The earliest start wins; at one start the shorter string was complete first.
    if (pos < best_pos || (pos == best_pos && s.size() < best->size())) {
      best = &s;
      best_pos = pos;
    }
  }
  if (!best) return false;
  held_.resize(best_pos + (conditions_.include_stop_str_in_output ? best->size() : 0));
  reason_ = FinishReason::kStop;
  stop_reason_ = *best;
  return true;
}

void RequestOutputProcessor::finish(FinishReason reason, std::optional<std::variant<int32_t, std::string>> stop_reason) {
  reason_ = reason;
  stop_reason_ = std::move(stop_reason);
  // The detokenizer's held text (an incomplete character, an open byte run) belongs to tokens
  // before this one, so a stop string it completes would have ended the request first: it wins.
  if (detok_) absorb(detok_->finish(), may_stop());
}

OutputDelta RequestOutputProcessor::release() {
  size_t keep = 0;  // bytes at the end of held_ that may begin a stop string
  if (!finished()) {
    for (const std::string& s : conditions_.stop) {
      for (size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k) {
        if (ends_with(held_, std::string_view(s).substr(0, k))) {
          keep = k;
          break;
        }
      }
    }
  }
  OutputDelta delta;
  delta.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, delta.text.size());
  text_ += delta.text;
  text_chars_ += static_cast<int64_t>(utf8::count_code_points(delta.text));
  // A token belongs to the output when its text starts before the output's text ends. That end is
  // known at the finish (a stop string cut it to text_; anything else cuts nothing), and before it
  // is past the streamed text, which is never taken back; without stop strings nothing is cut.
  const bool cut = finished() && stop_reason_ && std::holds_alternative<std::string>(*stop_reason_);
  const bool keep_all = !cut && (finished() || conditions_.stop.empty());
  while (!unsettled_.empty() && (keep_all || unsettled_.front().start < text_chars_)) {
    delta.logprobs.push_back(std::move(unsettled_.front().entry));
    unsettled_.pop_front();
  }
  if (finished()) unsettled_.clear();  // after the cut
  delta.finished = finished();
  delta.reason = reason_;
  delta.stop_reason = stop_reason_;
  return delta;
}

bool RequestOutputProcessor::shows_text(int32_t id) const {
  // IncrementalDetokenizer's rule for the tokens decode() drops.
  if (!tokenizer_ || id < 0 || id >= tokenizer_->vocab_size()) return false;
  return !(conditions_.skip_special_tokens && tokenizer_->is_special(id));
}

OutputDelta RequestOutputProcessor::push(int32_t token, const TokenLogprobs* logprobs,
                                         std::optional<FinishReason> end_with) {
  FG_CHECK(!finished(), "push() on a request that already finished (reason: {})", finish_reason_name(reason_));
  ++num_generated_;
  const bool stoppable = may_stop();
  const bool eos = stoppable && !conditions_.ignore_eos && contains(conditions_.eos_token_ids, token);
  const bool stop_id = stoppable && !eos && contains(conditions_.stop_token_ids, token);
  if (num_generated_ == 1) {
    with_logprobs_ = logprobs != nullptr;
    if (with_logprobs_ && tokenizer_) pieces_.emplace(*tokenizer_);
  }
  FG_CHECK((logprobs != nullptr) == with_logprobs_, "token {} came {} logprobs, the first token {}", num_generated_,
           logprobs ? "with" : "without", with_logprobs_ ? "with" : "without");
  if (logprobs) {
    const bool in_text = !eos && !stop_id && shows_text(token);
    const int64_t start = pieces_ ? pieces_->push(token, in_text).offset : 0;
    unsettled_.push_back({{token, in_text, *logprobs}, start});
  }
  if (eos) {
    finish(FinishReason::kStop, std::nullopt);
  } else if (stop_id) {
    finish(FinishReason::kStop, token);
  } else {
    // A stop-string match leaves the detokenizer's held text unflushed: it lies after the match.
    if (detok_) absorb(detok_->push(token), stoppable);
    if (!finished() && num_generated_ >= conditions_.max_tokens) finish(FinishReason::kLength, std::nullopt);
  }
  if (!finished() && end_with) finish(*end_with, std::nullopt);
  return release();
}

}  // namespace fg
