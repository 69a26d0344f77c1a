// tests/test_logprobs.cpp — which tokens' logprobs a request reports (RequestOutputProcessor: they
// end where the text ends, after a stop string too, and streamed deltas settle on the same ones),
// checked on hand-picked cases and against a property on random stop strings over the golden
// lines of every tokenizer.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/request_output.h"
#include "test_support.h"
#include "tokenizer/token_byte_stream.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace fg {
namespace {

const Tokenizer& llama3() { return test::tokenizer_fixture("llama3_1"); }
const Tokenizer& llama2() { return test::tokenizer_fixture("llama2"); }
constexpr int32_t kLlama3EotId = 128009;
const std::string kFox = "The quick brown fox jumps over the lazy dog.";  // 10 tokens, one word each

StopConditions conditions(int64_t max_tokens, std::vector<std::string> stop = {}) {
  StopConditions c;
  c.max_tokens = max_tokens;
  c.stop = std::move(stop);
  return c;
}

struct Reported {
  std::vector<OutputLogprobs> entries;  // joined over the deltas
  std::vector<size_t> per_push;         // how many each push reported
  std::string text;
  size_t pushed = 0;
  OutputDelta last;
};

// Pushes `ids` (token k with logprob -k) until the request finishes.
Reported feed(const Tokenizer* tok, const StopConditions& c, const std::vector<int32_t>& ids) {
  RequestOutputProcessor p(tok, c);
  Reported r;
  for (const int32_t id : ids) {
    if (p.finished()) break;
    TokenLogprobs lp;
    lp.logprob = -static_cast<float>(r.pushed++);
    OutputDelta d = p.push(id, &lp);
    r.per_push.push_back(d.logprobs.size());
    for (OutputLogprobs& e : d.logprobs) r.entries.push_back(std::move(e));
    r.text += d.text;
    r.last = std::move(d);
  }
  // Reported in order, each token once: a prefix of what was pushed.
  for (size_t k = 0; k < r.entries.size(); ++k) {
    EXPECT_EQ(r.entries[k].token, ids[k]) << k;
    EXPECT_EQ(r.entries[k].logprobs.logprob, -static_cast<float>(k)) << k;
  }
  return r;
}

std::vector<int32_t> tokens_of(const Reported& r) {
  std::vector<int32_t> out;
  for (const OutputLogprobs& e : r.entries) out.push_back(e.token);
  return out;
}

std::vector<int32_t> prefix(const std::vector<int32_t>& ids, size_t n) { return {ids.begin(), ids.begin() + n}; }

TEST(OutputLogprobs, EndWhereTheTextEndsAfterAStopString) {
  const std::vector<int32_t> fox = llama3().encode(kFox, false);  // The| quick| brown| fox| ...
  struct Case {
    std::string stop;
    bool include;
    std::string text;
    size_t tokens;  // the token in which the text ends is the last one reported
  };
  for (const Case& k : std::vector<Case>{
           {"ick bro", false, "The qu", 2},
           {"ick bro", true, "The quick bro", 3},
           {"quick brown fox", false, "The ", 2},  // " quick" carries the space
           {"quick brown fox", true, "The quick brown fox", 4},
           {"The", false, "", 0},
           {"dog.", false, "The quick brown fox jumps over the lazy ", 9},
           {" dog", false, "The quick brown fox jumps over the lazy", 8},
       }) {
    StopConditions c = conditions(16, {k.stop});
    c.include_stop_str_in_output = k.include;
    const Reported r = feed(&llama3(), c, fox);
    EXPECT_EQ(r.text, k.text) << k.stop;
    EXPECT_EQ(tokens_of(r), prefix(fox, k.tokens)) << k.stop << (k.include ? " (included)" : "");
  }
}

TEST(OutputLogprobs, ByteRunsAndSplitCharactersAreCutByCharacter) {
  // Llama-2: ▁A|<0xF0>|<0x9F>|<0xA6>|<0x99>|▁ll|ama. The detokenizer holds the whole byte run back
  // until ▁ll comes, yet " ll" starts after 🦙, so it goes with the cut.
  const std::vector<int32_t> llama = {330, 243, 162, 169, 156, 8814, 2786};
  const Reported run = feed(&llama2(), conditions(16, {" ll"}), llama);
  EXPECT_EQ(run.text, "A🦙");
  EXPECT_EQ(tokens_of(run), prefix(llama, 5));
  // Llama-3.1: L|ama|🦙 in three tokens|🦙 in three|Al|p|aka; "🦙A" ends the text after the first
  // 🦙: its three tokens stay, the second's go.
  const std::vector<int32_t> llamas = {43, 3105, 9468, 99, 247, 9468, 99, 247, 2149, 79, 13637};
  const Reported split = feed(&llama3(), conditions(16, {"🦙A"}), llamas);
  EXPECT_EQ(split.text, "Lama🦙");
  EXPECT_EQ(tokens_of(split), prefix(llamas, 5));
  // A stop string that ends inside a character's tokens never splits it: "ma🦙" keeps all three.
  StopConditions c = conditions(16, {"ma🦙"});
  c.include_stop_str_in_output = true;
  EXPECT_EQ(tokens_of(feed(&llama3(), c, llamas)), prefix(llamas, 5));
}

TEST(OutputLogprobs, NothingIsCutWithoutAStopString) {
  std::vector<int32_t> ids = llama3().encode("Hi there", false);
  ids.push_back(kLlama3EotId);
  StopConditions c = conditions(16);
  c.eos_token_ids = {kLlama3EotId};
  const Reported eos = feed(&llama3(), c, ids);
  ASSERT_EQ(tokens_of(eos), ids);  // the EOS has its logprobs, outside the text
  EXPECT_TRUE(eos.entries[0].in_text);
  EXPECT_FALSE(eos.entries.back().in_text);
  // Stop strings that never match cut nothing either, EOS included.
  c.stop = {"zzz"};
  EXPECT_EQ(tokens_of(feed(&llama3(), c, ids)), ids);
  // A stop token id likewise; a special token the output shows is in its text.
  c = conditions(16);
  c.stop_token_ids = {kLlama3EotId};
  EXPECT_FALSE(feed(&llama3(), c, ids).entries.back().in_text);
  c = conditions(16);
  c.skip_special_tokens = false;
  const Reported shown = feed(&llama3(), c, ids);
  EXPECT_TRUE(shown.entries.back().in_text);
  EXPECT_EQ(shown.text, "Hi there<|eot_id|>");
  // By length, and without a tokenizer (nothing is text then).
  EXPECT_EQ(tokens_of(feed(&llama3(), conditions(2, {"zz"}), ids)), prefix(ids, 2));
  const Reported bare = feed(nullptr, conditions(3), {5, 6, 7});
  EXPECT_EQ(tokens_of(bare), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_FALSE(bare.entries[0].in_text);
}

TEST(OutputLogprobs, HeldTextHoldsItsLogprobsUntilSettled) {
  // Hello| world|,| this| world| is| wide|. with stop " worldwide": " world" may begin it, so its
  // text and its logprobs wait for the next token, which rules it out.
  const std::vector<int32_t> ids = llama3().encode("Hello world, this world is wide.", false);
  const Reported r = feed(&llama3(), conditions(static_cast<int64_t>(ids.size()), {" worldwide"}), ids);
  EXPECT_EQ(r.per_push, (std::vector<size_t>{1, 0, 2, 1, 0, 2, 1, 1}));
  EXPECT_EQ(tokens_of(r), ids);
  // Without stop strings every token's logprobs come with it.
  EXPECT_EQ(feed(&llama3(), conditions(static_cast<int64_t>(ids.size())), ids).per_push,
            std::vector<size_t>(ids.size(), 1));
  // Logprobs come with every token or none.
  RequestOutputProcessor p(&llama3(), conditions(4));
  TokenLogprobs lp;
  p.push(ids[0], &lp);
  EXPECT_NE(test::error_of([&] { p.push(ids[1]); }).find("logprobs"), std::string::npos);
}

// Random stop strings on the golden lines of every tokenizer: when a stop string cut the text, the
// last token reported is the one whose bytes reach the cut, and no token before it does.
TEST(OutputLogprobs, TheLastTokenReportedHoldsTheEndOfTheTextOnGoldenLines) {
  std::mt19937 rng(11);
  for (const std::string name : {"llama2", "llama3_1", "qwen3"}) {
    const Tokenizer& tok = test::tokenizer_fixture(name);
    std::ifstream in(test::tokenizer_dir(name) + "/golden.jsonl");
    std::string line;
    int cut_lines = 0;
    while (std::getline(in, line)) {
      const std::vector<int32_t> ids = nlohmann::json::parse(line)["ids"];
      const std::string full = tok.decode(ids, true);
      if (ids.empty() || full.empty()) continue;
      // Each token's bytes and the bytes of the text before it.
      std::vector<size_t> ends;
      TokenByteStream stream(tok);
      size_t bytes = 0;
      for (const int32_t id : ids) {
        const bool in_text = !tok.is_special(id);
        const size_t n = stream.push(id, in_text).bytes.size();
        bytes += in_text ? n : 0;
        ends.push_back(bytes);
      }
      std::vector<size_t> bounds;  // character boundaries of `full`
      for (size_t pos = 0; pos < full.size(); utf8::next_code_point(full, pos)) bounds.push_back(pos);
      for (int trial = 0; trial < 4; ++trial) {
        const size_t a = std::uniform_int_distribution<size_t>(0, bounds.size() - 1)(rng);
        const size_t len = 1 + std::uniform_int_distribution<size_t>(0, 5)(rng);
        size_t end = bounds[a];
        for (size_t i = 0; i < len && end < full.size(); ++i) utf8::next_code_point(full, end);
        StopConditions c = conditions(static_cast<int64_t>(ids.size()), {full.substr(bounds[a], end - bounds[a])});
        c.include_stop_str_in_output = trial % 2 == 1;
        const Reported r = feed(&tok, c, ids);
        const size_t k = r.entries.size();
        if (r.last.reason != FinishReason::kStop) {
          EXPECT_EQ(k, r.pushed) << name << ": " << line;
          continue;
        }
        ++cut_lines;
        if (r.text.empty()) {
          EXPECT_EQ(k, 0u) << name << ": " << line;
          continue;
        }
        ASSERT_GE(k, 1u) << name << ": " << line;
        EXPECT_LT(k >= 2 ? ends[k - 2] : 0, r.text.size()) << name << " stop '" << c.stop[0] << "': " << line;
        EXPECT_GE(ends[k - 1], r.text.size()) << name << " stop '" << c.stop[0] << "': " << line;
      }
    }
    EXPECT_GT(cut_lines, 100) << name;
  }
}

}  // namespace
}  // namespace fg
