// tokenizer/incremental_detokenizer.h — streaming detokenization: text deltas as token ids arrive.
//
// Guarantees: every delta is valid UTF-8 (bytes of a character split across tokens are held back
// until the character is complete), and the deltas of a stream, joined, equal
// Tokenizer::decode(all ids) exactly — including SentencePiece's leading-space strip, skipped
// special tokens and Hugging Face's lossy handling of invalid byte sequences.
//
// Method: decode a short window (the tokens of the previous delta plus the new ones) and emit what
// extends the window's earlier text, once that text is final: it must not end in U+FFFD (an
// incomplete character decodes to one), and no run of ByteFallback <0xNN> tokens may be open,
// because Hugging Face decodes a whole run as U+FFFD per byte as soon as any part of it is invalid,
// so even a finished "\n" can still change until the run ends. The decoder's final Strip (Llama-2's
// "drop the first space") acts on the edges of the whole text, so windows are decoded without it and
// the stream applies it to what it emits; Metaspace's first-token rule applies to a window only
// while no token before it has been decoded. Decoders whose steps do not allow windows (see
// StreamPlan) are decoded whole at finish().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace fg {

class IncrementalDetokenizer {
 public:
  // `tokenizer` must outlive this object.
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens);

  // The text this token adds (often empty while a character or byte run is incomplete).
  std::string push(int32_t id);
  // The text still held back; call once at the end of the stream. The object is then reset.
  std::string finish();

 private:
  // Applies the decoder's final Strip to text about to be emitted.
  std::string strip_edges(std::string text, bool at_end);
  // Whether decode() drops `id` (a skipped special token, or an id without a token).
  bool dropped(int32_t id) const;
  std::string decode_window() const;
  void reset();

  const Tokenizer* tokenizer_;
  const StreamPlan* plan_;
  bool skip_special_;
  std::vector<int32_t> window_;  // the tokens of the last delta, then the tokens not yet emitted
  size_t emitted_ = 0;           // window_[0, emitted_) are the tokens of the last delta
  std::string emitted_text_;     // their decode, without the final Strip
  bool byte_run_open_ = false;   // the last decoded token is a ByteFallback byte
  bool text_started_ = false;    // a decoded token precedes the window
  size_t lead_strip_left_ = 0;   // leading strip characters the final Strip may still remove
  std::string held_tail_;        // trailing strip characters the final Strip may yet remove
};

}  // namespace fg
