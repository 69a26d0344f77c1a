// tokenizer/tokenizer.h — fullgraph's tokenizer: loads a Hugging Face tokenizer.json (BPE,
// byte-level as in Llama-3/Qwen, or SentencePiece-style with byte fallback as in Llama-2/Mistral)
// and encodes/decodes exactly as the Python `tokenizers` package (0.23) does.
//
// Encoding runs the same pipeline: added tokens are cut out of the raw text, each stretch between
// them is normalized, pre-tokenized and run through the BPE model, and with add_special_tokens the
// post-processor's template adds BOS and the like. Anything in tokenizer.json that fullgraph does
// not implement is refused at load with the JSON path named, never approximated.
//
// A Tokenizer is immutable after loading (its BPE cache is internally synchronized): share one
// between threads freely. Copies share the loaded data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/decoders.h"

namespace fg {

class Tokenizer {
 public:
  // Reads and loads `path` (a tokenizer.json).
  static Tokenizer from_file(const std::string& path);
  // Loads tokenizer.json text; `source` names it in errors.
  static Tokenizer from_json(std::string_view text, const std::string& source);

  // Token ids of `text`, which must be valid UTF-8 (fg::Error otherwise).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // Text of `ids`. Ids without a token are skipped, as in Hugging Face; invalid UTF-8 produced by
  // byte tokens becomes U+FFFD, so the result is always valid UTF-8.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  // Number of ids: the model's vocabulary plus added tokens beyond it (ids are 0..vocab_size()-1).
  int64_t vocab_size() const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  // Whether decode(skip_special_tokens=true) drops this id: special added tokens (<s>,
  // <|im_end|>...), by Hugging Face's rule (see AddedVocabulary::skipped_as_special).
  bool is_special(int32_t id) const;

  // Whether `id` is one of tokenizer.json's added tokens (special or not): text spelling it is cut
  // out before the model runs.
  bool is_added(int32_t id) const;

  // For IncrementalDetokenizer: whether `id` is a byte token that the decoder joins with its
  // neighbours (ByteFallback <0xNN>), so text cannot be final while a run of them is open; how the
  // decoder can be streamed; and decode() of a window of a stream (see DecodeScope).
  bool is_fallback_byte(int32_t id) const;
  const StreamPlan& stream_plan() const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens, DecodeScope scope) const;

  // Where the tokenizer was loaded from.
  const std::string& source() const;

  struct Impl;  // the loaded parts; defined in tokenizer_impl.h, for tokenizer/ only

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  friend struct TokenizerLoader;

  std::shared_ptr<const Impl> impl_;
};

}  // namespace fg
