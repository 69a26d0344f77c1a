// tests/test_token_bytes.cpp — TokenByteStream (tokenizer/token_byte_stream.h): every token's own
// raw bytes, joined, rebuild the decoded text on the golden lines of every tokenizer; tokens that
// hold part of a character keep their bytes (byte-level BPE and SentencePiece byte fallback);
// SentencePiece's first-space rule applies to the first token of the text only; tokens outside the
// text move nothing; and chars() counts the text's characters as decode() has them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.h"
#include "tokenizer/builtin_tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/token_byte_stream.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace fg {
namespace {

const Tokenizer& fixture(const std::string& name) { return test::tokenizer_fixture(name); }

int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Each token's bytes as the stream reports them (push() reports what bytes() said it would);
// tokens that decode(skip_special_tokens=true) drops are outside the text. `joined`: the bytes of
// the tokens in the text; `chars`: the stream's count of the text's characters.
std::vector<std::string> stream_bytes(const Tokenizer& tok, const std::vector<int32_t>& ids, std::string& joined,
                                      int64_t* chars = nullptr) {
  TokenByteStream stream(tok);
  std::vector<std::string> out;
  for (const int32_t id : ids) {
    const bool in_text = !tok.is_special(id);
    out.push_back(stream.bytes(id));
    EXPECT_EQ(stream.push(id, in_text).bytes, out.back()) << "id " << id;
    if (in_text) joined += out.back();
  }
  if (chars) *chars = stream.chars();
  return out;
}

TEST(TokenBytes, JoinToTheDecodedTextOnGoldenLinesOfEveryTokenizer) {
  for (const std::string name : {"llama2", "llama3_1", "qwen3"}) {
    const Tokenizer& tok = fixture(name);
    std::ifstream in(test::tokenizer_dir(name) + "/golden.jsonl");
    ASSERT_TRUE(in) << name;
    std::string line;
    int checked = 0;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line);
      for (const char* key : {"ids", "ids_with_special"}) {
        std::string joined;
        int64_t chars = 0;
        stream_bytes(tok, j[key], joined, &chars);
        const std::string text = tok.decode(j[key].get<std::vector<int32_t>>(), /*skip_special_tokens=*/true);
        EXPECT_EQ(utf8::lossy(joined), text) << name << ": " << line;
        EXPECT_EQ(chars, code_points(text)) << name << ": " << line;
        ++checked;
      }
    }
    EXPECT_EQ(checked, 100) << name;
  }
}

TEST(TokenBytes, PartialCharactersKeepTheirOwnBytes) {
  // Llama-3.1 (byte-level BPE): A|🦙 in three tokens| llama.
  const Tokenizer& llama3 = fixture("llama3_1");
  std::string joined;
  EXPECT_EQ(stream_bytes(llama3, {32, 9468, 99, 247, 94776}, joined),
            (std::vector<std::string>{"A", "\xF0\x9F", "\xA6", "\x99", " llama"}));
  EXPECT_EQ(joined, "A🦙 llama");
  // Llama-2 (SentencePiece, byte fallback): ▁A|<0xF0>|<0x9F>|<0xA6>|<0x99>|▁ll|ama. The first
  // token begins the text, so its space goes (the decoder's Strip), as in decode(); later ones keep it.
  const Tokenizer& llama2 = fixture("llama2");
  joined.clear();
  EXPECT_EQ(stream_bytes(llama2, {330, 243, 162, 169, 156, 8814, 2786}, joined),
            (std::vector<std::string>{"A", "\xF0", "\x9F", "\xA6", "\x99", " ll", "ama"}));
  EXPECT_EQ(joined, llama2.decode(std::vector<int32_t>{330, 243, 162, 169, 156, 8814, 2786}, true));
  // " Hello world": ▁|▁Hello|▁world — the Strip takes one space, the first token's.
  joined.clear();
  EXPECT_EQ(stream_bytes(llama2, {28705, 22557, 1526}, joined), (std::vector<std::string>{"", " Hello", " world"}));
  // The built-in model's byte-level tokenizer: "é" is one token, its two bytes split are two.
  const Tokenizer builtin = Tokenizer::from_json(builtin_tokenizer_json(), "built-in");
  const std::vector<int32_t> e_acute = builtin.encode("é", false);
  ASSERT_FALSE(e_acute.empty());
  joined.clear();
  stream_bytes(builtin, e_acute, joined);
  EXPECT_EQ(joined, "é");
}

TEST(TokenBytes, TokensOutsideTheTextMoveNothing) {
  const Tokenizer& llama2 = fixture("llama2");
  TokenByteStream stream(llama2);
  // </s> (2) before any text: its content, and the next token still begins the text.
  const TokenPiece eos = stream.push(2, /*in_text=*/false);
  EXPECT_EQ(eos.bytes, "</s>");
  EXPECT_EQ(eos.offset, 0);
  EXPECT_EQ(stream.bytes(22557), "Hello");
  EXPECT_EQ(stream.push(22557, true).bytes, "Hello");
  EXPECT_EQ(stream.bytes(22557), " Hello");  // no longer the first token
  EXPECT_EQ(stream.chars(), 5);
}

TEST(TokenBytes, OffsetsCountCharactersAsTheTextHasThem) {
  const Tokenizer& llama2 = fixture("llama2");
  TokenByteStream stream(llama2);
  const auto offset = [&](int32_t id) { return stream.push(id, true).offset; };
  EXPECT_EQ(offset(22557), 0);  // Hello
  // 🦙 in four byte tokens: all of them start in character 5; the next token in 6.
  EXPECT_EQ(offset(243), 5);
  EXPECT_EQ(stream.chars(), 6);  // a character still missing bytes shows as one U+FFFD
  EXPECT_EQ(offset(162), 5);
  EXPECT_EQ(offset(169), 5);
  EXPECT_EQ(offset(156), 5);
  EXPECT_EQ(offset(28741), 6);  // A
  EXPECT_EQ(stream.chars(), 7);

  // Bytes that never make a character count as decode() shows them; for byte-level BPE that is
  // one U+FFFD per maximal ill-formed part (from_utf8_lossy).
  const Tokenizer& llama3 = fixture("llama3_1");
  const auto byte = [&](uint8_t b) { return *llama3.token_to_id(byte_level::spell(std::string(1, char(b)))); };
  const std::vector<int32_t> ids = {byte('A'), byte(0xF0), byte(0x9F), byte('A'), byte(0x9F), byte(0x9F), byte('A')};
  TokenByteStream bytes(llama3);
  std::vector<int64_t> offsets;
  for (const int32_t id : ids) offsets.push_back(bytes.push(id, true).offset);
  // A|<F0 9F: one U+FFFD>|A|<9F>|<9F>|A
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 1, 1, 2, 3, 4, 5}));
  EXPECT_EQ(bytes.chars(), 6);
  EXPECT_EQ(utf8::count_code_points(llama3.decode(ids, true)), 6u);
}

}  // namespace
}  // namespace fg
