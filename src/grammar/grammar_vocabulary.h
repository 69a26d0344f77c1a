// grammar/grammar_vocabulary.h — what the grammar engine needs to know of a model's tokens: the
// bytes each id adds to the output text, and which ids end it.
//
// The bytes of an id are those it adds to the text in the middle of a generation, as the
// engine's detokenizer writes it (TokenByteStream's bytes, tokenizer/token_byte_stream.h):
// byte-level BPE tokens through the GPT-2 byte decoder, SentencePiece tokens with ▁ as a space
// and <0xNN> byte-fallback tokens as that byte, non-special added tokens as their content. A
// token may hold part of a UTF-8 character; the grammar is matched on bytes. Ids that add nothing
// the grammar may accept have no bytes (""), which xgrammar reads as "never allowed": special
// tokens (decoding skips them, so they are not part of the text), ids of the model past the
// tokenizer's vocabulary, and ids whose decoding is empty. The EOS ids are the stop tokens:
// allowed exactly where the grammar may end.
//
// SentencePiece's first-token rule (a Metaspace or Strip decoder drops the space that starts the
// text) is not applied: a first token "▁{" counts as " {". A grammar that allows no leading space
// therefore makes the model start with "{", and the text, joined from the tokens' bytes, is
// exactly what the grammar matched.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace fg {

struct GrammarVocabulary {
  std::vector<std::string> token_bytes;  // [model vocab_size]: the bytes of each id ("" = never allowed)
  std::vector<int32_t> stop_token_ids;   // the EOS ids, sorted and distinct
  int64_t vocab_size() const { return static_cast<int64_t>(token_bytes.size()); }
};

// The vocabulary of `tokenizer` for a model whose logits have `model_vocab_size` entries (it may
// be larger than the tokenizer's, whose ids past it are never allowed, or smaller, whose ids past
// it are dropped). `eos_token_ids`: every id that ends a generation (config.json's and
// generation_config.json's); at least one, each inside the model's vocabulary. Throws fg::Error.
GrammarVocabulary grammar_vocabulary(const Tokenizer& tokenizer, int64_t model_vocab_size,
                                     std::span<const int32_t> eos_token_ids);

}  // namespace fg
