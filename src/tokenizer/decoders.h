// tokenizer/decoders.h — the "decoder" of tokenizer.json: turning token texts back into text.
// Supported: ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, and Sequence of those; a null
// decoder joins the tokens with spaces, as Hugging Face does.
//
// Steps work on the list of token strings in order, exactly like Hugging Face's decode_chain:
// ByteLevel turns the whole list into one string (bytes of the GPT-2 alphabet, invalid UTF-8
// replaced as from_utf8_lossy does), ByteFallback turns runs of <0xNN> tokens into text (one
// U+FFFD per byte if a run is not valid UTF-8), Fuse joins, Strip and Replace act per token,
// Metaspace turns ▁ into spaces except in the first token, where (unless prepend_scheme is never)
// it drops them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pattern.h"

namespace fg {

class JsonView;

// How a stream of tokens can be decoded piece by piece (used by IncrementalDetokenizer).
struct StreamPlan {
  // Decoding a window of recent tokens (without the final Strip) gives exactly the text they add
  // to the whole: every step is per token, per character, or ByteFallback's byte runs.
  bool by_window = true;
  // A Strip that ends the pipeline acts on the edges of the whole text; the stream applies it
  // itself: drop up to `strip_start` leading and `strip_stop` trailing copies of `strip`.
  std::string strip;
  size_t strip_start = 0;
  size_t strip_stop = 0;

  // The bytes the final Strip removes from the front of `piece`, the next piece of a stream's text
  // while `left` leading strip characters may still go (strip_start at first); updates `left`.
  size_t leading_strip(std::string_view piece, size_t& left) const;
};

// What a decode call covers: the whole text (the default), or a window of a stream.
struct DecodeScope {
  bool final_strip = true;  // apply a Strip that ends the pipeline (see StreamPlan)
  bool starts_text = true;  // the first token begins the text (Metaspace drops its ▁)
  // Keep the bytes that ByteLevel and ByteFallback produce as they are, even where they are not
  // valid UTF-8 (a token that holds part of a character): logprobs report each token's own bytes.
  // A Replace after such a step leaves a token that is not valid UTF-8 untouched (its pattern
  // reads text); no supported tokenizer has one there.
  bool raw_bytes = false;
};

class Decoder {
 public:
  static Decoder from_json(const JsonView& node);

  // Decodes token texts (consumed) into a string.
  std::string decode(std::vector<std::string>& tokens, DecodeScope scope = {}) const;

  const StreamPlan& stream_plan() const { return plan_; }

  // True when a ByteFallback step would read `token` as a byte (and it precedes other steps that
  // could change the token): the streaming detokenizer must then wait for the byte run to end.
  bool is_fallback_byte(std::string_view token) const;

  // ByteFallback's reading of a token: "<0x" + two characters that Rust's u8::from_str_radix(_, 16)
  // accepts (hex digits of either case, or '+' and one digit) + ">".
  static bool parse_byte_token(std::string_view token, uint8_t& byte);

 private:
  enum class Kind { kByteLevel, kByteFallback, kFuse, kStrip, kReplace, kMetaspace };
  struct Step {
    Kind kind = Kind::kFuse;
    Pattern pattern = Pattern::literal("");  // Replace
    std::string content;                     // Replace: the replacement; Strip, Metaspace: the character
    bool drop_first = false;                 // Metaspace: drop (not convert) ▁ in the first token
    size_t start = 0;                        // Strip: at most this many leading `content` characters
    size_t stop = 0;                         // Strip: at most this many trailing ones
  };
  static Step make_step(Kind kind);
  void add_from_json(const JsonView& node);
  StreamPlan compute_stream_plan() const;

  std::vector<Step> steps_;
  bool join_with_spaces_ = false;  // no decoder at all
  StreamPlan plan_;
};

}  // namespace fg
