// engine/request_output.h — one request's output side: its stop conditions, the decision that it
// has finished (and why), and the text it streams, with vLLM v1's semantics (the scheduler's
// check_stop, the detokenizer's stop-string check and the output processor's finish reasons).
//
// Per generated token, in this order: count it; then, once num_generated >= min_tokens, (1) an EOS
// id (unless ignore_eos) finishes with "stop" and its text is never shown; (2) a stop_token_id
// finishes with "stop", stop_reason = the id, its text not shown; (3) the token is detokenized and
// the new text is searched for stop strings: the match that starts earliest wins (the shortest of
// those starting there), the output is cut just before it (just after it with
// include_stop_str_in_output) and stop_reason = the string. Then (4) the max_tokens-th token
// finishes with "length" if nothing else did. Unlike vLLM (which checks length first), a stop on
// the last token reports "stop".
//
// Streaming: text that may still turn out to begin a stop string is held back until it is ruled
// out, so a client never sees text that the final output does not contain, and the deltas joined
// always equal text(). With no stop strings, the deltas of a request that ends by length join to
// Tokenizer::decode(ids) exactly (IncrementalDetokenizer's guarantee, kept here by never altering
// its text).
//
// Logprobs follow the text: a token belongs to the output when its text starts before the output's
// text ends (in characters, TokenByteStream's offsets: a token that finishes a character starts in
// it), so after a stop string the tokens that only carried the cut-off text (and the token that
// finished the request) have no logprobs, and the last one reported is the token in which the
// text ends. Ending by EOS, stop token id or length cuts nothing: every token belongs. A token's
// logprobs are reported once that is settled — at once without stop strings; with them, when text
// past the token's start has been streamed, or at the finish — so the reported ones, joined over
// the deltas, are always the final output's: a prefix of the tokens pushed.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runner/step_io.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/token_byte_stream.h"
#include "tokenizer/tokenizer.h"

namespace fg {

struct StopConditions {
  int64_t max_tokens = 16;          // >= 1: generation ends with reason "length" after this many tokens
  int64_t min_tokens = 0;           // no stop of any kind (EOS, stop ids, stop strings) before this many tokens
  std::vector<std::string> stop;    // stop strings (non-empty, valid UTF-8)
  std::vector<int32_t> stop_token_ids;
  std::vector<int32_t> eos_token_ids;  // the model's (config.json / generation_config.json)
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
};

enum class FinishReason { kNone, kStop, kLength, kAbort };

// The OpenAI finish_reason: "stop", "length", "abort"; nullptr for kNone (JSON null).
const char* finish_reason_name(FinishReason reason);

// Throws fg::Error naming the field: max_tokens < 1, min_tokens < 0 or > max_tokens, an empty stop
// string or one that is not valid UTF-8 (matching is bytewise, which equals vLLM's per-character
// matching only when both sides are valid UTF-8).
void validate_stop_conditions(const StopConditions& conditions);

// The logprobs of one generated token that belongs to the output.
struct OutputLogprobs {
  int32_t token = 0;
  // Its text is part of the output's text; false for an EOS, a stop token id, a special token
  // that skip_special_tokens drops, and every token of a request without a tokenizer.
  bool in_text = false;
  TokenLogprobs logprobs;
};

struct OutputDelta {
  std::string text;  // new text to stream (valid UTF-8), may be empty
  // Tokens now settled as part of the output, in order, for those pushed with logprobs (see above).
  std::vector<OutputLogprobs> logprobs;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  // vLLM's stop_reason: the stop token id or stop string that ended the request; none for EOS and
  // length.
  std::optional<std::variant<int32_t, std::string>> stop_reason;
};

// One request's generated tokens → text deltas and the finish decision. Not thread-safe: the
// engine loop owns it.
class RequestOutputProcessor {
 public:
  // `tokenizer` may be null: then no text is produced and `conditions.stop` must be empty. When
  // set, it must outlive this object. Validates `conditions`.
  RequestOutputProcessor(const Tokenizer* tokenizer, StopConditions conditions);

  // Feeds the next generated token, with its logprobs when the request asked for them (for every
  // token or for none: fg::Error otherwise); returns what to stream. Must not be called after a
  // finished delta (fg::Error). `end_with`: the request ends with this token whatever the stop
  // conditions say (its grammar is complete, or refused it), with that reason unless a stop
  // condition ended it on this token first.
  OutputDelta push(int32_t token, const TokenLogprobs* logprobs = nullptr,
                   std::optional<FinishReason> end_with = std::nullopt);

  int64_t num_generated() const { return num_generated_; }
  // All text streamed so far: the deltas joined; once finished, the final output text.
  const std::string& text() const { return text_; }
  bool finished() const { return reason_ != FinishReason::kNone; }
  FinishReason finish_reason() const { return reason_; }

 private:
  // Whether the token just counted may end the request (min_tokens); one place, because vLLM's
  // observable rule differs by one token (see request_output.cpp).
  bool may_stop() const;
  // Appends freshly detokenized text to held_ and, when `check`, searches it for a stop string that
  // ends inside it; on a match cuts held_ and records the stop. Returns whether one matched.
  bool absorb(const std::string& fresh, bool check);
  // Ends the request (EOS, stop id, length): flushes the detokenizer's held text, which may itself
  // complete a stop string, and then the stop string wins.
  void finish(FinishReason reason, std::optional<std::variant<int32_t, std::string>> stop_reason);
  // Moves what may be streamed from held_ to text_ and returns it, with the logprobs it settles.
  OutputDelta release();
  // Whether `id`'s text is part of the output's text when it does not finish the request.
  bool shows_text(int32_t id) const;

  StopConditions conditions_;
  const Tokenizer* tokenizer_;                      // may be null
  std::unique_ptr<IncrementalDetokenizer> detok_;  // null without a tokenizer
  int64_t num_generated_ = 0;
  std::string text_;  // streamed so far
  std::string held_;  // detokenized but not streamed: a possible stop-string start (see .cpp)
  int64_t text_chars_ = 0;  // characters of text_
  // Logprobs: whether the first token came with them; where each token's text starts (made at the
  // first token, with a tokenizer); the tokens not yet known to belong to the output.
  bool with_logprobs_ = false;
  std::optional<TokenByteStream> pieces_;
  struct Unsettled {
    OutputLogprobs entry;
    int64_t start = 0;  // the character of the text before any cut where the token's text starts
  };
  std::deque<Unsettled> unsettled_;
  FinishReason reason_ = FinishReason::kNone;
  std::optional<std::variant<int32_t, std::string>> stop_reason_;
};

}  // namespace fg
