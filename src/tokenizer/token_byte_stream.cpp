// tokenizer/token_byte_stream.cpp — see token_byte_stream.h.
#include "tokenizer/token_byte_stream.h"

#include "tokenizer/utf8.h"

namespace fg {

namespace {

// Characters of `bytes` as decode() shows them (ill-formed parts as U+FFFD).
int64_t lossy_chars(std::string_view bytes) {
  return static_cast<int64_t>(utf8::count_code_points(utf8::lossy(bytes)));
}

}  // namespace

TokenByteStream::TokenByteStream(const Tokenizer& tokenizer)
    : tokenizer_(&tokenizer), plan_(&tokenizer.stream_plan()), lead_strip_left_(plan_->strip_start) {}

std::string TokenByteStream::bytes(int32_t id) const {
  size_t left = lead_strip_left_;
  return bytes_and_strip(id, left);
}

TokenPiece TokenByteStream::push(int32_t id, bool in_text) {
  TokenPiece piece;
  size_t left = lead_strip_left_;
  piece.bytes = bytes_and_strip(id, left);
  if (!in_text) {
    piece.offset = chars();
    return piece;
  }
  // The bytes continue the unfinished character when, read after it, they make fewer characters
  // than the two read apart (where the character alone would be one U+FFFD).
  const bool continues = !tail_.empty() && lossy_chars(tail_ + piece.bytes) < 1 + lossy_chars(piece.bytes);
  piece.offset = continues ? chars_ : chars();
  text_started_ = true;
  lead_strip_left_ = left;
  tail_ += piece.bytes;
  // Complete characters (and ill-formed parts) are counted now; an incomplete character waits for
  // the bytes that finish it, or turn out not to.
  const size_t done = tail_.size() - utf8::incomplete_tail_length(tail_);
  chars_ += lossy_chars(std::string_view(tail_).substr(0, done));
  tail_.erase(0, done);
  return piece;
}

std::string TokenByteStream::bytes_and_strip(int32_t id, size_t& lead_strip_left) const {
  const int32_t one[1] = {id};
  // A decoder that cannot be read per token (see the header): the token alone, and never as the
  // text's start, so that " world" keeps its space.
  if (!plan_->by_window)
    return tokenizer_->decode(one, /*skip_special_tokens=*/false,
                              DecodeScope{/*final_strip=*/false, /*starts_text=*/false, /*raw_bytes=*/true});
  std::string out = tokenizer_->decode(
      one, /*skip_special_tokens=*/false,
      DecodeScope{/*final_strip=*/false, /*starts_text=*/!text_started_, /*raw_bytes=*/true});
  out.erase(0, plan_->leading_strip(out, lead_strip_left));
  return out;
}

}  // namespace fg
