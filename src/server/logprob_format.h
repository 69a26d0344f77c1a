// server/logprob_format.h — logprobs in each endpoint's OpenAI format: completions' {tokens,
// token_logprobs, top_logprobs, text_offset} and chat's content[] of {token, logprob, bytes,
// top_logprobs[] of {token, logprob, bytes}}, for whole responses and stream chunks alike.
//
// Bytes. A token is its own raw bytes (tokenizer/token_byte_stream.h): a token that holds part of
// a UTF-8 character has those bytes, not U+FFFD's, and the bytes of a choice's tokens, joined, are
// exactly its text's UTF-8 (tokens outside the text, such as an EOS, add their content's bytes).
// Without a tokenizer there are no bytes: chat's "bytes" is null.
//
// Token strings ("token", completions' tokens and top_logprobs keys): the token's bytes when they
// are valid UTF-8; otherwise "bytes:" and the bytes as Python's bytes repr spells them (printable
// ASCII as itself, \\ \t \n \r, others \xNN): "bytes:\xe4\xbd" is OpenAI's spelling of such a
// token, in both endpoints. With return_tokens_as_token_ids (vLLM's option), and for a model
// without tokenizer, every token is "token_id:<id>".
//
// text_offset: the character of the choice's text in which the token starts, counted as the text
// has them (an ill-formed byte run is its U+FFFD); a token that continues a character begun by the
// tokens before it points at that character, and one outside the text (an EOS) at the text's end.
//
// Completions' top_logprobs are dicts keyed by token string, and distinct ids can share a string
// (a byte-fallback <0x41> and "A", an added token that spells a vocabulary one). No entry is
// lost: the sampled token's string is reserved for it (so top_logprobs[i][tokens[i]], when
// present, is always the sampled token's logprob); the alternatives, most likely first, take their
// own string when it is free, else "token_id:<id>" (else "token_id:<id>#2", "#3"...: only if a
// token is spelled exactly so). Chat's top_logprobs are lists and need no such rule.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/request_output.h"
#include "tokenizer/token_byte_stream.h"
#include "tokenizer/tokenizer.h"

namespace fg::server {

using ojson = nlohmann::ordered_json;

struct LogprobOptions {
  // vLLM's --return-tokens-as-token-ids: name every token "token_id:<id>", so that clients can
  // tell tokens apart whose text is alike, or not valid UTF-8.
  bool return_tokens_as_token_ids = false;
};

// JSON has no infinities: -inf (a masked token) is reported as -9999.0, as vLLM does.
double json_logprob(float logprob);

class LogprobFormatter {
 public:
  // `tokenizer` may be null (then tokens are "token_id:<id>"); it must outlive the formatter.
  explicit LogprobFormatter(const Tokenizer* tokenizer, LogprobOptions options = {})
      : tokenizer_(tokenizer), options_(options) {}

  // Where one choice stands in its text; start one per choice. Each call below moves it past the
  // tokens it formats, so consecutive stream chunks continue one another.
  class Cursor {
    friend class LogprobFormatter;
    std::optional<TokenByteStream> stream_;  // none without a tokenizer
  };
  Cursor start() const;

  // The string that names token `id`, whose raw bytes are `bytes` (see above).
  std::string token_string(int32_t id, std::string_view bytes) const;

  // Completions format: {tokens, token_logprobs, top_logprobs, text_offset}.
  ojson completion(std::span<const OutputLogprobs> entries, Cursor& cursor) const;
  // Chat format: the entries of "content".
  ojson chat_content(std::span<const OutputLogprobs> entries, Cursor& cursor) const;

  // vLLM's prompt_logprobs: null for the first prompt token (nothing precedes it), then for each
  // next one a dict keyed by token id of {logprob, rank, decoded_token}: the prompt token's own
  // (its rank in the distribution), then the top k not already there (ranks 1..k). `scored[i]` is
  // prompt token i + 1's (RequestOutput::prompt_logprobs).
  ojson prompt_logprobs(std::span<const int32_t> prompt, std::span<const TokenLogprobs> scored) const;
  // Completions' echo with logprobs: the prompt's tokens in completion format, to stand before the
  // generated ones; the first has no logprob and no top_logprobs (null, as vLLM reports it).
  // Special tokens (a BOS) are outside the echoed text. Moves `cursor` past the prompt.
  ojson echoed_prompt(std::span<const int32_t> prompt, std::span<const TokenLogprobs> scored, Cursor& cursor) const;
  // Completion-format `more` appended to `into`, array by array (echo's prompt, then the output).
  static void append_completion(ojson& into, const ojson& more);

 private:
  ojson bytes_json(std::string_view bytes) const;

  const Tokenizer* tokenizer_;
  LogprobOptions options_;
};

}  // namespace fg::server
