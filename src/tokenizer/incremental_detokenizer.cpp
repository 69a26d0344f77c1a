// tokenizer/incremental_detokenizer.cpp — the windowed streaming decoder (see the header).
#include "tokenizer/incremental_detokenizer.h"

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace fg {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), plan_(&tokenizer.stream_plan()), skip_special_(skip_special_tokens) {
  reset();
}

void IncrementalDetokenizer::reset() {
  text_started_ = false;
  window_.clear();
  emitted_ = 0;
  emitted_text_.clear();
  byte_run_open_ = false;
  lead_strip_left_ = plan_->strip_start;
  held_tail_.clear();
}

std::string IncrementalDetokenizer::strip_edges(std::string text, bool at_end) {
  const std::string& c = plan_->strip;
  if (c.empty()) return text;
  text.erase(0, plan_->leading_strip(text, lead_strip_left_));
  if (plan_->strip_stop == 0) return text;
  // Trailing: a run of `c` at the end may turn out to end the whole text; hold it until it does not.
  held_tail_ += text;
  size_t keep = held_tail_.size(), run = 0;
  while (keep >= c.size() && held_tail_.compare(keep - c.size(), c.size(), c) == 0) {
    keep -= c.size();
    ++run;
  }
  if (at_end) keep = held_tail_.size() - std::min(run, plan_->strip_stop) * c.size();
  std::string out = held_tail_.substr(0, keep);
  held_tail_.erase(0, at_end ? std::string::npos : keep);
  return out;
}

bool IncrementalDetokenizer::dropped(int32_t id) const {
  return (skip_special_ && tokenizer_->is_special(id)) || id < 0 || id >= tokenizer_->vocab_size();
}

std::string IncrementalDetokenizer::decode_window() const {
  return tokenizer_->decode(window_, skip_special_, DecodeScope{/*final_strip=*/false, /*starts_text=*/!text_started_});
}

std::string IncrementalDetokenizer::push(int32_t id) {
  window_.push_back(id);
  if (!plan_->by_window) return {};  // decoded whole by finish()
  // Tokens that decode() drops do not end a byte run.
  if (!dropped(id)) byte_run_open_ = tokenizer_->is_fallback_byte(id);
  if (byte_run_open_) return {};
  std::string text = decode_window();
  if (text.size() <= emitted_text_.size() || ends_with(text, utf8::kReplacement) ||
      text.compare(0, emitted_text_.size(), emitted_text_) != 0)
    return {};
  std::string delta = text.substr(emitted_text_.size());
  for (size_t i = 0; i < emitted_; ++i) text_started_ = text_started_ || !dropped(window_[i]);
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(emitted_));
  emitted_ = window_.size();
  emitted_text_ = decode_window();
  return strip_edges(std::move(delta), /*at_end=*/false);
}

std::string IncrementalDetokenizer::finish() {
  std::string rest;
  if (!plan_->by_window) {
    rest = tokenizer_->decode(window_, skip_special_);
  } else {
    const std::string text = decode_window();
    // The window starts where decoding is separable, so its text extends what was emitted.
    FG_ASSERT(text.compare(0, emitted_text_.size(), emitted_text_) == 0);
    rest = strip_edges(text.substr(emitted_text_.size()), /*at_end=*/true);
  }
  reset();
  return rest;
}

}  // namespace fg
