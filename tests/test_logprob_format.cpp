// tests/test_logprob_format.cpp — how the server spells logprobs (server/logprob_format.h): each
// token's raw bytes (joined: the text), "bytes:\xNN" strings for tokens that hold part of a
// character in both endpoints, completions' top_logprobs keys that never collide,
// return_tokens_as_token_ids, text offsets in characters, tokens outside the text, and stream
// chunks that join to the whole response.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/openai_response.h"
#include "server/sse_stream.h"
#include "test_support.h"
#include "tokenizer/builtin_tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace fg::server {
namespace {

const Tokenizer& llama3() { return test::tokenizer_fixture("llama3_1"); }
const Tokenizer& llama2() { return test::tokenizer_fixture("llama2"); }
constexpr int32_t kLlama3EotId = 128009;
const std::vector<int32_t> kLlama = {32, 9468, 99, 247, 94776};  // Llama-3.1: A|🦙 in three tokens| llama

// Entries for `ids` (all in the text), token k with logprob -k and `top` as its alternatives.
std::vector<OutputLogprobs> entries(const std::vector<int32_t>& ids,
                                    const std::vector<std::pair<int32_t, float>>& top = {}) {
  std::vector<OutputLogprobs> out;
  for (size_t k = 0; k < ids.size(); ++k) {
    OutputLogprobs e;
    e.token = ids[k];
    e.in_text = true;
    e.logprobs.logprob = -static_cast<float>(k);
    e.logprobs.top = top;
    out.push_back(e);
  }
  return out;
}

std::string joined_bytes(const ojson& content) {
  std::string out;
  for (const ojson& entry : content)
    for (const ojson& b : entry["bytes"]) out.push_back(static_cast<char>(b.get<int>()));
  return out;
}

TEST(LogprobFormat, PartialTokensKeepTheirBytesAndAreNamedByThemInBothEndpoints) {
  const LogprobFormatter format(&llama3());
  LogprobFormatter::Cursor cursor = format.start();
  const ojson chat = format.chat_content(entries(kLlama, {{9468, -1.0f}, {32, -2.0f}}), cursor);
  const std::vector<std::string> names = {"A", "bytes:\\xf0\\x9f", "bytes:\\xa6", "bytes:\\x99", " llama"};
  ASSERT_EQ(chat.size(), names.size());
  for (size_t k = 0; k < names.size(); ++k) EXPECT_EQ(chat[k]["token"], names[k]) << k;
  EXPECT_EQ(chat[1]["bytes"], (ojson{0xF0, 0x9F}));
  EXPECT_EQ(joined_bytes(chat), "A🦙 llama");  // not U+FFFD's bytes
  // The alternatives are spelled the same way, at the sampled token's place.
  EXPECT_EQ(chat[0]["top_logprobs"][0]["token"], "bytes:\\xf0\\x9f");
  EXPECT_EQ(chat[0]["top_logprobs"][0]["bytes"], (ojson{0xF0, 0x9F}));
  EXPECT_EQ(chat[4]["top_logprobs"][1]["token"], "A");
  cursor = format.start();
  const ojson text = format.completion(entries(kLlama), cursor);
  EXPECT_EQ(text["tokens"], ojson(names));
  // Characters: 🦙 starts in the second token; the third and fourth continue it.
  EXPECT_EQ(text["text_offset"], (ojson{0, 1, 1, 1, 2}));
  EXPECT_NO_THROW(text.dump());  // every string is valid UTF-8
  // Python's bytes repr: printable ASCII as itself, backslash and control bytes escaped.
  EXPECT_EQ(format.token_string(0, "a\\\n\x01\xff"), "bytes:a\\\\\\n\\x01\\xff");
}

TEST(LogprobFormat, TheBuiltInModelsBytesJoinToItsText) {
  // The reproduction: the built-in model answers "hi" with U+0304 split over two byte tokens.
  const Tokenizer builtin = Tokenizer::from_json(builtin_tokenizer_json(), "built-in");
  const std::string text = "\xCC\x84" "a";  // U+0304, a
  std::vector<int32_t> ids;
  for (const char c : text) {  // byte by byte, as a model may generate it
    const auto id = builtin.token_to_id(byte_level::spell(std::string(1, c)));
    ASSERT_TRUE(id.has_value());
    ids.push_back(*id);
  }
  const LogprobFormatter format(&builtin);
  LogprobFormatter::Cursor cursor = format.start();
  const ojson chat = format.chat_content(entries(ids), cursor);
  EXPECT_EQ(joined_bytes(chat), text);
  EXPECT_EQ(chat[0]["token"], "bytes:\\xcc");
  EXPECT_EQ(chat[2]["token"], "a");
}

TEST(LogprobFormat, TopLogprobKeysNeverCollide) {
  // Llama-2: "▁A" (330) at the start of the text, "A" (28741) and <0x41> (68) all spell "A".
  const LogprobFormatter format(&llama2());
  LogprobFormatter::Cursor cursor = format.start();
  const std::vector<std::pair<int32_t, float>> top = {{330, -0.5f}, {68, -1.0f}, {28741, -1.5f}, {1, -2.0f}};
  ojson c = format.completion(entries({28741}, top), cursor);
  EXPECT_EQ(c["tokens"][0], "A");
  // The sampled token keeps its string; the others are named by id, most likely first.
  EXPECT_EQ(c["top_logprobs"][0].dump(), R"({"token_id:330":-0.5,"token_id:68":-1.0,"A":-1.5,"<s>":-2.0})");
  // The sampled token's string is its own even when it is not among the alternatives.
  cursor = format.start();
  c = format.completion(entries({28741}, {{330, -0.5f}, {68, -1.0f}}), cursor);
  EXPECT_EQ(c["top_logprobs"][0].dump(), R"({"token_id:330":-0.5,"token_id:68":-1.0})");
  // Every window of 20 ids of both vocabularies keeps its 20 entries.
  for (const Tokenizer* tok : {&llama2(), &llama3()}) {
    const LogprobFormatter f(tok);
    for (int32_t first = 0; first + 20 <= tok->vocab_size(); first += 20) {
      std::vector<std::pair<int32_t, float>> window;
      for (int32_t id = first; id < first + 20; ++id) window.push_back({id, -1.0f});
      cursor = f.start();
      ASSERT_EQ(f.completion(entries({first}, window), cursor)["top_logprobs"][0].size(), 20u) << first;
    }
  }
}

TEST(LogprobFormat, ReturnTokensAsTokenIds) {
  const LogprobFormatter format(&llama3(), LogprobOptions{.return_tokens_as_token_ids = true});
  LogprobFormatter::Cursor cursor = format.start();
  const ojson text = format.completion(entries(kLlama, {{9468, -1.0f}}), cursor);
  EXPECT_EQ(text["tokens"], (ojson{"token_id:32", "token_id:9468", "token_id:99", "token_id:247", "token_id:94776"}));
  EXPECT_EQ(text["top_logprobs"][0].dump(), R"({"token_id:9468":-1.0})");
  EXPECT_EQ(text["text_offset"], (ojson{0, 1, 1, 1, 2}));
  cursor = format.start();
  const ojson chat = format.chat_content(entries(kLlama, {{9468, -1.0f}}), cursor);
  EXPECT_EQ(chat[1]["token"], "token_id:9468");
  EXPECT_EQ(chat[1]["top_logprobs"][0]["token"], "token_id:9468");
  EXPECT_EQ(joined_bytes(chat), "A🦙 llama");  // the bytes stay the token's own
}

TEST(LogprobFormat, TokensOutsideTheTextAndModelsWithoutTokenizer) {
  const LogprobFormatter format(&llama3());
  std::vector<OutputLogprobs> list = entries({13347, kLlama3EotId});  // Hi|<|eot_id|>
  list[1].in_text = false;
  LogprobFormatter::Cursor cursor = format.start();
  const ojson text = format.completion(list, cursor);
  EXPECT_EQ(text["tokens"], (ojson{"Hi", "<|eot_id|>"}));
  EXPECT_EQ(text["text_offset"], (ojson{0, 2}));  // the EOS sits at the end of the text
  const LogprobFormatter bare(nullptr);
  cursor = bare.start();
  const ojson chat = bare.chat_content(entries({5}, {{5, -1.0f}}), cursor);
  EXPECT_EQ(chat[0]["token"], "token_id:5");
  EXPECT_TRUE(chat[0]["bytes"].is_null());
  EXPECT_TRUE(chat[0]["top_logprobs"][0]["bytes"].is_null());
}

TEST(LogprobFormat, StreamChunksJoinToTheWholeResponse) {
  const ResponseHeader h{"cmpl-1", 1, "tiny"};
  const std::vector<OutputLogprobs> all = entries(kLlama, {{9468, -1.0f}});
  ChoiceOutput whole;
  whole.logprobs = all;
  const LogprobFormatter format(&llama3());
  const ojson want = completion_response(h, {whole}, true, {1, 5}, format)["choices"][0]["logprobs"];
  const ojson want_chat = chat_response(h, {whole}, true, {1, 5}, format)["choices"][0]["logprobs"]["content"];
  StreamFormatter text(Endpoint::kCompletions, h, 1, 1, false, format);
  StreamFormatter chat(Endpoint::kChatCompletions, h, 1, 1, false, format);
  ojson got = {{"tokens", ojson::array()}, {"text_offset", ojson::array()}};
  ojson got_chat = ojson::array();
  for (const auto& [from, to] : std::vector<std::pair<size_t, size_t>>{{0, 2}, {2, 3}, {3, 5}}) {
    RequestOutput delta;
    delta.token_ids = {0};
    delta.logprobs.assign(all.begin() + static_cast<std::ptrdiff_t>(from),
                          all.begin() + static_cast<std::ptrdiff_t>(to));
    const auto event = [](const std::string& sse) { return ojson::parse(sse.substr(6)); };
    const ojson lp = event(text.delta(0, delta))["choices"][0]["logprobs"];
    for (const char* key : {"tokens", "text_offset"})
      for (const ojson& v : lp[key]) got[key].push_back(v);
    const ojson content = event(chat.delta(0, delta))["choices"][0]["logprobs"]["content"];
    for (const ojson& v : content) got_chat.push_back(v);
  }
  EXPECT_EQ(got["tokens"], want["tokens"]);
  EXPECT_EQ(got["text_offset"], want["text_offset"]);
  EXPECT_EQ(got_chat, want_chat);
  // A chunk whose tokens have not settled yet carries no logprobs.
  RequestOutput held;
  held.token_ids = {7};
  EXPECT_TRUE(ojson::parse(text.delta(0, held).substr(6))["choices"][0]["logprobs"].is_null());
}

}  // namespace
}  // namespace fg::server
