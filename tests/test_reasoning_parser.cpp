// tests/test_reasoning_parser.cpp — server/reasoning_parser: vLLM's qwen3 and deepseek_r1 splits of
// a whole text, and the streamed split, which must give the same reasoning and content however
// the text is cut into deltas: at every byte, one byte at a time, and at random.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "server/reasoning_parser.h"

namespace fg::server {
namespace {

using Kind = ReasoningParserKind;

struct Joined {
  std::string reasoning, content;
  bool ended_at_end = false;
};

Joined stream_pieces(Kind kind, const std::vector<std::string>& pieces, bool thinking = true) {
  ReasoningStream stream(kind, thinking);
  Joined out;
  for (const std::string& piece : pieces) {
    const ReasoningDelta delta = stream.feed(piece);
    out.reasoning += delta.reasoning;
    out.content += delta.content;
  }
  const ReasoningDelta tail = stream.finish();
  out.reasoning += tail.reasoning;
  out.content += tail.content;
  out.ended_at_end = stream.reasoning_ended();
  return out;
}

// The non-streamed split with null read as "", for comparing with a stream.
Joined joined(const ReasoningSplit& split) { return {split.reasoning.value_or(""), split.content.value_or(""), false}; }

// Real outputs: Qwen3 (hybrid thinking: the model writes <think>), Qwen3-2507 / DeepSeek-R1-0528
// (the template opened <think> in the prompt), and edge cases.
const std::vector<std::string>& corpus() {
  static const std::vector<std::string> texts = {
      "<think>\nOkay, the user asks for the capital of France. That's Paris.\n</think>\n\nThe capital of France is "
      "Paris.",
      "The user wants 17 * 23. 17 * 20 = 340, 17 * 3 = 51, total 391.\n</think>\n\n17 × 23 = **391**.",
      "<think>\n\n</think>\n\nHello! How can I help you today?",
      "<think>\nLet me think about <b>tags</b> and the </thin word.\n</think>\n\nDone: </think> stays in content.",
      "\n<think>reasoning</think>answer",
      "<think>cut off while thinking, no end tag <",
      "no tags at all, just an answer",
      "<think></think>",
      "</think>",
      "<thinkX> not an opening tag </think>after",
      "héllo wörld 你好 </think> 内容 ✓",
      "",
      "   ",
  };
  return texts;
}

TEST(ReasoningParser, NamesAreVllms) {
  EXPECT_EQ(reasoning_parser_from_name("qwen3"), Kind::kQwen3);
  EXPECT_EQ(reasoning_parser_from_name("deepseek_r1"), Kind::kDeepSeekR1);
  EXPECT_EQ(reasoning_parser_from_name("qwen"), std::nullopt);
  EXPECT_EQ(reasoning_parser_from_name(""), std::nullopt);
  ASSERT_EQ(reasoning_parser_names().size(), 2u);
  for (std::string_view name : reasoning_parser_names()) {
    ASSERT_TRUE(reasoning_parser_from_name(name));
    EXPECT_EQ(reasoning_parser_name(*reasoning_parser_from_name(name)), name);
  }
}

TEST(ReasoningParser, Qwen3SplitsOnTheTags) {
  const ReasoningSplit split = split_reasoning(Kind::kQwen3, corpus()[0]);
  EXPECT_EQ(split.reasoning, "\nOkay, the user asks for the capital of France. That's Paris.\n");
  EXPECT_EQ(split.content, "\n\nThe capital of France is Paris.");
}

TEST(ReasoningParser, OpeningTagMayBeInThePrompt) {
  for (Kind kind : {Kind::kQwen3, Kind::kDeepSeekR1}) {
    const ReasoningSplit split = split_reasoning(kind, corpus()[1]);
    EXPECT_EQ(split.reasoning, "The user wants 17 * 23. 17 * 20 = 340, 17 * 3 = 51, total 391.\n");
    EXPECT_EQ(split.content, "\n\n17 × 23 = **391**.");
  }
}

TEST(ReasoningParser, NoEndTagMeansStillThinking) {
  // vLLM: the generation stopped inside the reasoning (max_tokens), so it is all reasoning.
  for (Kind kind : {Kind::kQwen3, Kind::kDeepSeekR1}) {
    const ReasoningSplit cut = split_reasoning(kind, "<think>cut off while thinking, no end tag <");
    EXPECT_EQ(cut.reasoning, "cut off while thinking, no end tag <");
    EXPECT_EQ(cut.content, std::nullopt);
    const ReasoningSplit plain = split_reasoning(kind, "no tags at all");
    EXPECT_EQ(plain.reasoning, "no tags at all");
    EXPECT_EQ(plain.content, std::nullopt);
  }
}

TEST(ReasoningParser, Qwen3WithoutThinkingIsAllContent) {
  // enable_thinking=false: the template closed <think></think> in the prompt.
  const ReasoningSplit split = split_reasoning(Kind::kQwen3, "Paris is the capital.", /*thinking_enabled=*/false);
  EXPECT_EQ(split.reasoning, std::nullopt);
  EXPECT_EQ(split.content, "Paris is the capital.");
  // Even a stray tag stays content, as vLLM's serving layer routes it.
  EXPECT_EQ(split_reasoning(Kind::kQwen3, "a</think>b", false).content, "a</think>b");
  // deepseek_r1 has no such switch.
  EXPECT_EQ(split_reasoning(Kind::kDeepSeekR1, "a</think>b", false).reasoning, "a");
}

TEST(ReasoningParser, EmptyPartsAreNullAsVllmGivesThem) {
  const ReasoningSplit qwen = split_reasoning(Kind::kQwen3, "<think>\n\n</think>\n\nHello!");
  EXPECT_EQ(qwen.reasoning, "\n\n");
  EXPECT_EQ(qwen.content, "\n\nHello!");
  const ReasoningSplit qwen_empty = split_reasoning(Kind::kQwen3, "<think></think>");
  EXPECT_EQ(qwen_empty.reasoning, std::nullopt);
  EXPECT_EQ(qwen_empty.content, std::nullopt);
  // deepseek_r1's reasoning is a string even when empty; its content is null when empty.
  const ReasoningSplit r1 = split_reasoning(Kind::kDeepSeekR1, "<think></think>");
  EXPECT_EQ(r1.reasoning, "");
  EXPECT_EQ(r1.content, std::nullopt);
  EXPECT_EQ(split_reasoning(Kind::kDeepSeekR1, "").reasoning, "");
}

TEST(ReasoningParser, OnlyTheFirstEndTagSplits) {
  const ReasoningSplit split = split_reasoning(Kind::kQwen3, corpus()[3]);
  EXPECT_EQ(split.reasoning, "\nLet me think about <b>tags</b> and the </thin word.\n");
  EXPECT_EQ(split.content, "\n\nDone: </think> stays in content.");
}

TEST(ReasoningParser, OpeningTagCountsOnlyAtTheStart) {
  // Leading whitespace before <think> is dropped with it (vLLM drops what precedes it).
  const ReasoningSplit lead = split_reasoning(Kind::kDeepSeekR1, "\n<think>reasoning</think>answer");
  EXPECT_EQ(lead.reasoning, "reasoning");
  EXPECT_EQ(lead.content, "answer");
  // A <think> later in the text is text.
  const ReasoningSplit later = split_reasoning(Kind::kDeepSeekR1, "x <think>y</think>z");
  EXPECT_EQ(later.reasoning, "x <think>y");
  EXPECT_EQ(later.content, "z");
  const ReasoningSplit near_miss = split_reasoning(Kind::kQwen3, "<thinkX> not an opening tag </think>after");
  EXPECT_EQ(near_miss.reasoning, "<thinkX> not an opening tag ");
  EXPECT_EQ(near_miss.content, "after");
}

TEST(ReasoningParser, StreamedInTwoPiecesAtEveryByteEqualsWhole) {
  for (Kind kind : {Kind::kQwen3, Kind::kDeepSeekR1}) {
    for (bool thinking : {true, false}) {
      for (const std::string& text : corpus()) {
        const Joined whole = joined(split_reasoning(kind, text, thinking));
        for (size_t cut = 0; cut <= text.size(); ++cut) {
          const Joined streamed = stream_pieces(kind, {text.substr(0, cut), text.substr(cut)}, thinking);
          ASSERT_EQ(streamed.reasoning, whole.reasoning) << "text: " << text << " cut at " << cut;
          ASSERT_EQ(streamed.content, whole.content) << "text: " << text << " cut at " << cut;
        }
      }
    }
  }
}

TEST(ReasoningParser, StreamedOneByteAtATimeEqualsWhole) {
  for (Kind kind : {Kind::kQwen3, Kind::kDeepSeekR1}) {
    for (const std::string& text : corpus()) {
      std::vector<std::string> bytes;
      for (char c : text) bytes.emplace_back(1, c);
      const Joined whole = joined(split_reasoning(kind, text));
      const Joined streamed = stream_pieces(kind, bytes);
      EXPECT_EQ(streamed.reasoning, whole.reasoning) << text;
      EXPECT_EQ(streamed.content, whole.content) << text;
    }
  }
}

TEST(ReasoningParser, StreamedAtRandomCutsEqualsWhole) {
  std::mt19937 rng(7);
  for (Kind kind : {Kind::kQwen3, Kind::kDeepSeekR1}) {
    for (const std::string& text : corpus()) {
      const Joined whole = joined(split_reasoning(kind, text));
      for (int trial = 0; trial < 50; ++trial) {
        std::vector<std::string> pieces;
        for (size_t at = 0; at < text.size();) {
          const size_t n = std::uniform_int_distribution<size_t>(0, 6)(rng);
          pieces.push_back(text.substr(at, n));
          at += n;
        }
        const Joined streamed = stream_pieces(kind, pieces);
        ASSERT_EQ(streamed.reasoning, whole.reasoning) << text;
        ASSERT_EQ(streamed.content, whole.content) << text;
      }
    }
  }
}

TEST(ReasoningParser, NothingIsSentThatMightBeATag) {
  ReasoningStream stream(Kind::kQwen3);
  EXPECT_TRUE(stream.feed("<thi").empty());  // may be <think>
  ReasoningDelta d = stream.feed("nk>Plan: a<");
  EXPECT_EQ(d.reasoning, "Plan: a");  // "<" may start </think>
  d = stream.feed("/th");
  EXPECT_TRUE(d.empty());
  d = stream.feed("ink>Answer");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Answer");
  EXPECT_TRUE(stream.reasoning_ended());
}

TEST(ReasoningParser, ReasoningEndedFollowsTheTagTokenByToken) {
  // Qwen3's tokens: "</think>" is one token; the grammar starts after it.
  const std::vector<std::string> tokens = {"<think>", "\n", "Need", " JSON", ".\n", "</think>", "\n\n", "{\""};
  ReasoningStream stream(Kind::kQwen3);
  std::vector<bool> ended;
  for (const std::string& token : tokens) {
    stream.feed(token);
    ended.push_back(stream.reasoning_ended());
  }
  EXPECT_EQ(ended, (std::vector<bool>{false, false, false, false, false, true, true, true}));
  // A tag that arrives in pieces ends the reasoning with its last byte, not before.
  ReasoningStream pieces(Kind::kDeepSeekR1);
  pieces.feed("x</thi");
  EXPECT_FALSE(pieces.reasoning_ended());
  pieces.feed("nk");
  EXPECT_FALSE(pieces.reasoning_ended());
  pieces.feed(">");
  EXPECT_TRUE(pieces.reasoning_ended());
  // Without thinking, it has ended before the first token.
  EXPECT_TRUE(ReasoningStream(Kind::kQwen3, /*thinking_enabled=*/false).reasoning_ended());
  EXPECT_FALSE(ReasoningStream(Kind::kDeepSeekR1, false).reasoning_ended());
}

}  // namespace
}  // namespace fg::server
