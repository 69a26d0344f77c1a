// fuzz/fuzz_tokenizer_load.cpp — libFuzzer target for the tokenizer.json loader.
//
// Any input must either load or raise fg::Error (deep nesting, huge or malformed JSON, unsupported
// or inconsistent parts). A crash, a sanitizer report or another exception type is a finding.
// Whatever loads is then used: a few encodes (ids must be in the vocabulary, decodes must be valid
// UTF-8) and a decode of the first ids, so that validation gaps show up as bad accesses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

void exercise(const fg::Tokenizer& tok) {
  const int64_t vocab = tok.vocab_size();
  require(vocab > 0);
  for (const std::string_view text : {"", "a", "ab ab<s>", " Hello  world\n\n", "é😀\t12345 <|im_start|>x",
                                      "\xE2\x96\x81<0x41>"}) {
    for (const bool special : {false, true}) {
      const std::vector<int32_t> ids = tok.encode(text, special);
      for (const int32_t id : ids) require(id >= 0 && id < vocab);
      const std::string decoded = tok.decode(ids, false);
      require(fg::utf8::is_valid(decoded));
      fg::IncrementalDetokenizer detok(tok, false);
      std::string joined;
      for (const int32_t id : ids) joined += detok.push(id);
      joined += detok.finish();
      require(joined == decoded);
    }
  }
  std::vector<int32_t> first;
  for (int32_t id = 0; id < vocab && id < 64; ++id) first.push_back(id);
  first.push_back(static_cast<int32_t>(vocab));  // past the end: skipped
  for (const bool skip : {false, true}) {
    require(fg::utf8::is_valid(tok.decode(first, skip)));
    for (const int32_t id : first) {
      (void)tok.id_to_token(id);
      (void)tok.is_special(id);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const fg::Tokenizer tok = fg::Tokenizer::from_json(text, "fuzz input");
    exercise(tok);
  } catch (const fg::Error&) {
    return 0;  // refused with a message: the expected outcome for most inputs
  }
  return 0;
}
