// fuzz/fuzz_tokenizer_encode.cpp — libFuzzer target for encoding and decoding arbitrary text with
// the real Qwen3 (byte-level BPE, NFC) and Llama-2 (SentencePiece-style, byte fallback) tokenizers.
//
// The tokenizers come from $FULLGRAPH_TESTDATA/tokenizers/, else from the fixtures folder next to
// this checkout (../../shared/testdata relative to this source file), loaded once. For each input:
// invalid UTF-8 must be refused with fg::Error and valid UTF-8 must encode, with and without
// special tokens; ids must lie in the vocabulary; decodes must be valid UTF-8 and equal what the
// streaming detokenizer produces; and when no added token was matched, text must survive the
// round trip: decode(encode(x)) == NFC(x) for Qwen3, and == x for Llama-2 when x has no U+2581.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json/json_view.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

std::string testdata_dir() {
  if (const char* env = std::getenv("FULLGRAPH_TESTDATA")) return env;
#ifdef FULLGRAPH_TESTDATA
  return FULLGRAPH_TESTDATA;
#else
  const std::string here = __FILE__;
  return here.substr(0, here.rfind('/')) + "/../../shared/testdata";
#endif
}

struct Fixtures {
  fg::Tokenizer qwen3 = fg::Tokenizer::from_file(testdata_dir() + "/tokenizers/qwen3/tokenizer.json");
  fg::Tokenizer llama2 = fg::Tokenizer::from_file(testdata_dir() + "/tokenizers/llama2/tokenizer.json");
  nlohmann::json nfc_spec = {{"type", "NFC"}};
  std::string nfc_source = "NFC";
  fg::Normalizer nfc = fg::Normalizer::from_json(fg::JsonView(nfc_spec, nfc_source, "normalizer"));
};

const Fixtures& fixtures() {
  static const Fixtures f;  // loading takes about a second: once per fuzzing process
  return f;
}

bool has_added_token(const fg::Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (const int32_t id : ids)
    if (tok.is_added(id)) return true;
  return false;
}

void check(const fg::Tokenizer& tok, std::string_view text, bool qwen) {
  const bool valid = fg::utf8::is_valid(text);
  for (const bool special : {false, true}) {
    std::vector<int32_t> ids;
    try {
      ids = tok.encode(text, special);
    } catch (const fg::Error&) {
      require(!valid);
      continue;
    }
    require(valid);
    for (const int32_t id : ids) require(id >= 0 && id < tok.vocab_size());
    const std::string decoded = tok.decode(ids, false);
    require(fg::utf8::is_valid(decoded));
    for (const bool skip : {false, true}) {
      fg::IncrementalDetokenizer detok(tok, skip);
      std::string joined;
      for (const int32_t id : ids) {
        const std::string delta = detok.push(id);
        require(fg::utf8::is_valid(delta));
        joined += delta;
      }
      joined += detok.finish();
      require(joined == tok.decode(ids, skip));
    }
    if (special || has_added_token(tok, ids)) continue;
    if (qwen) {
      std::string expected(text);
      fixtures().nfc.normalize(expected);
      require(decoded == expected);
    } else if (text.find("\xE2\x96\x81") == std::string_view::npos) {
      require(decoded == text);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)fixtures();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check(fixtures().qwen3, text, true);
  check(fixtures().llama2, text, false);
  return 0;
}
