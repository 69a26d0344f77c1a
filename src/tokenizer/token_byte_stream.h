// tokenizer/token_byte_stream.h — the raw bytes each token of a generated stream adds to its text,
// and the character of that text where they start: what logprobs report per token.
//
// A token's bytes are its own, never made valid: byte-level BPE tokens through the GPT-2 byte
// decoder, SentencePiece tokens with ▁ as a space and <0xNN> byte-fallback tokens as that byte,
// added and special tokens as their content. A token that holds part of a UTF-8 character
// therefore has bytes that are not valid UTF-8 on their own, and the bytes of a stream's tokens,
// joined, are exactly the bytes of its text (where that text is valid UTF-8).
//
// The stream is the generated text alone, as the engine decodes it (IncrementalDetokenizer): its
// first shown token starts the text, so SentencePiece's "drop the first space" rules (a final
// Strip, Metaspace's first-token rule) apply to it, exactly as they do to the output text.
// Tokens outside the text (an EOS, a stop token id, a special token the output skips) report
// their content's bytes and leave the stream where it was.
//
// Characters are counted as the engine's text has them where it is valid UTF-8. Bytes that never
// make a character count as from_utf8_lossy shows them (one U+FFFD per maximal ill-formed part),
// which is what byte-level BPE's decode() does; SentencePiece's ByteFallback shows an invalid byte
// run as one U+FFFD per byte, which an offset cannot know while the run is open, so after such a
// run (a model that generates broken UTF-8) its offsets may be short by a few characters.
//
// Limits: a decoder whose steps do not work per token (StreamPlan::by_window false; none of the
// supported tokenizers) gets each token's bytes decoded alone, and a final Strip that removes
// trailing characters (none of them either) is not applied to the last tokens.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace fg {

struct TokenPiece {
  std::string bytes;
  // The character of the text in which `bytes` start: a token that continues a character begun
  // by the tokens before it points at that character. Outside the text: the text's length so far.
  int64_t offset = 0;
};

class TokenByteStream {
 public:
  // `tokenizer` must outlive this object.
  explicit TokenByteStream(const Tokenizer& tokenizer);

  // The bytes `id` would add to the text as the next token (an alternative to the sampled one).
  std::string bytes(int32_t id) const;
  // The sampled next token: its bytes and offset, and moves past it. When it is not `in_text`
  // (an EOS, a stop token id, a skipped special token) the stream stays where it was.
  TokenPiece push(int32_t id, bool in_text);

  // Characters of the text so far (a character still missing bytes counts as its U+FFFD).
  int64_t chars() const { return chars_ + (tail_.empty() ? 0 : 1); }

 private:
  // bytes(), and how many leading strip characters may still go after it.
  std::string bytes_and_strip(int32_t id, size_t& lead_strip_left) const;

  const Tokenizer* tokenizer_;
  const StreamPlan* plan_;
  bool text_started_ = false;  // a token of the text precedes: SentencePiece's first-token rules are spent
  size_t lead_strip_left_;     // leading strip characters the final Strip may still remove
  int64_t chars_ = 0;          // characters of the text before tail_
  std::string tail_;           // the last bytes of the text: an incomplete (so far well-formed) character
};

}  // namespace fg
