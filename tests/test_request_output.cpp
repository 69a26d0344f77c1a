// tests/test_request_output.cpp — a request's stop conditions and streamed text
// (engine/request_output.h) against the real test tokenizers: finish reasons and stop_reason, the
// min_tokens gate, stop strings across and inside tokens (and inside multi-byte characters), the
// hold-back of possible stop-string starts, and a randomized comparison with an oracle that
// re-derives the streamed text from Tokenizer::decode of id prefixes.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/request_output.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace fg {
namespace {

constexpr int32_t kLlama3EndOfText = 128001;  // <|end_of_text|>
constexpr int32_t kLlama3EotId = 128009;      // <|eot_id|>
constexpr int32_t kLlama3Period = 13;         // "."

using test::tokenizer_dir;
const Tokenizer& fixture(const std::string& name) { return test::tokenizer_fixture(name); }
const Tokenizer& llama3() { return fixture("llama3_1"); }

struct GoldenLine {
  std::vector<int32_t> ids;
  std::vector<int32_t> ids_with_special;
};

std::vector<GoldenLine> golden(const std::string& name) {
  std::ifstream in(tokenizer_dir(name) + "/golden.jsonl");
  EXPECT_TRUE(in) << "missing golden.jsonl for " << name;
  std::vector<GoldenLine> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    out.push_back({j["ids"], j["ids_with_special"]});
  }
  return out;
}

std::vector<int32_t> ids_of(const std::string& text) { return llama3().encode(text, false); }

std::vector<int32_t> prefix(const std::vector<int32_t>& ids, size_t n) { return {ids.begin(), ids.begin() + n}; }

StopConditions conditions(int64_t max_tokens) {
  StopConditions c;
  c.max_tokens = max_tokens;
  return c;
}

struct Streamed {
  std::vector<std::string> deltas;  // one per push
  std::string joined;
  OutputDelta last;
};

// Pushes `ids` until the request finishes, checking the streaming invariants after every push.
Streamed feed(RequestOutputProcessor& p, const std::vector<int32_t>& ids) {
  Streamed s;
  for (const int32_t id : ids) {
    if (p.finished()) break;
    OutputDelta d = p.push(id);
    EXPECT_TRUE(utf8::is_valid(d.text)) << "delta " << s.deltas.size() << " is not valid UTF-8";
    s.joined += d.text;
    EXPECT_EQ(s.joined, p.text()) << "after push " << s.deltas.size() + 1;
    EXPECT_EQ(d.finished, p.finished());
    EXPECT_EQ(p.num_generated(), static_cast<int64_t>(s.deltas.size() + 1));
    if (!d.finished) {
      EXPECT_EQ(d.reason, FinishReason::kNone);
      EXPECT_FALSE(d.stop_reason.has_value());
    }
    s.deltas.push_back(d.text);
    s.last = std::move(d);
  }
  return s;
}

// Runs a fresh request over `ids` with the Llama-3.1 tokenizer.
Streamed run(const StopConditions& c, const std::vector<int32_t>& ids) {
  RequestOutputProcessor p(&llama3(), c);
  return feed(p, ids);
}

void expect_stop_string(const Streamed& s, const std::string& stop) {
  EXPECT_TRUE(s.last.finished);
  EXPECT_EQ(s.last.reason, FinishReason::kStop);
  ASSERT_TRUE(s.last.stop_reason.has_value());
  ASSERT_TRUE(std::holds_alternative<std::string>(*s.last.stop_reason));
  EXPECT_EQ(std::get<std::string>(*s.last.stop_reason), stop);
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no fg::Error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

const std::string kFox = "The quick brown fox jumps over the lazy dog.";  // 10 tokens, one word each

TEST(StopChecker, ValidationNamesTheField) {
  auto validate = [](auto edit) {
    return [edit] {
      StopConditions c;
      edit(c);
      validate_stop_conditions(c);
    };
  };
  expect_error(validate([](StopConditions& c) { c.max_tokens = 0; }), "max_tokens");
  expect_error(validate([](StopConditions& c) { c.min_tokens = -1; }), "min_tokens");
  expect_error(validate([](StopConditions& c) { c.min_tokens = 17; }), "min_tokens");
  expect_error(validate([](StopConditions& c) { c.stop = {"ok", ""}; }), "stop[1]");
  expect_error(validate([](StopConditions& c) { c.stop = {"\xC3"}; }), "stop[0] is not valid UTF-8");
  StopConditions ok;
  ok.min_tokens = ok.max_tokens;  // min_tokens == max_tokens is allowed
  ok.stop = {"a", "\xC3\xA4"};
  EXPECT_NO_THROW(validate_stop_conditions(ok));
  // The processor validates too, and stop strings need a tokenizer.
  expect_error([] { RequestOutputProcessor(&llama3(), conditions(0)); }, "max_tokens");
  StopConditions with_stop = conditions(4);
  with_stop.stop = {"x"};
  expect_error([&] { RequestOutputProcessor(nullptr, with_stop); }, "tokenizer");

  EXPECT_STREQ(finish_reason_name(FinishReason::kStop), "stop");
  EXPECT_STREQ(finish_reason_name(FinishReason::kLength), "length");
  EXPECT_STREQ(finish_reason_name(FinishReason::kAbort), "abort");
  EXPECT_EQ(finish_reason_name(FinishReason::kNone), nullptr);
}

TEST(RequestOutput, MaxTokensFinishesWithLength) {
  const auto ids = ids_of(kFox);
  const Streamed s = run(conditions(4), ids);
  ASSERT_EQ(s.deltas.size(), 4u);
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
  EXPECT_FALSE(s.last.stop_reason.has_value());
  EXPECT_EQ(s.joined, "The quick brown fox");
  EXPECT_EQ(s.joined, llama3().decode(prefix(ids, 4), true));
}

TEST(RequestOutput, PushAfterFinishIsAnError) {
  RequestOutputProcessor p(&llama3(), conditions(1));
  EXPECT_TRUE(p.push(ids_of(kFox)[0]).finished);
  expect_error([&] { p.push(1); }, "already finished");
}

// With no stop strings and no EOS, the deltas join to decode(ids) on every golden line of every
// tokenizer, with and without special tokens (Llama-2's leading-space strip and byte runs included).
TEST(RequestOutput, WithoutStopsDeltasJoinToTheFullDecode) {
  for (const std::string name : {"llama2", "llama3_1", "qwen3"}) {
    const Tokenizer& tok = fixture(name);
    for (const GoldenLine& g : golden(name)) {
      for (const bool skip : {true, false}) {
        const std::vector<int32_t>& ids = g.ids_with_special;
        if (ids.empty()) continue;
        StopConditions c = conditions(static_cast<int64_t>(ids.size()));
        c.skip_special_tokens = skip;
        RequestOutputProcessor p(&tok, c);
        const Streamed s = feed(p, ids);
        EXPECT_EQ(s.last.reason, FinishReason::kLength);
        EXPECT_EQ(s.joined, tok.decode(ids, skip)) << name << " skip_special_tokens=" << skip;
      }
    }
  }
}

TEST(RequestOutput, EosFinishesWithStopAndNoEosText) {
  auto ids = ids_of(kFox);
  ids.insert(ids.begin() + 3, kLlama3EotId);
  StopConditions c = conditions(16);
  c.eos_token_ids = {kLlama3EndOfText, kLlama3EotId};
  c.skip_special_tokens = false;  // the EOS text would show if it were emitted
  const Streamed s = run(c, ids);
  ASSERT_EQ(s.deltas.size(), 4u);
  EXPECT_EQ(s.last.reason, FinishReason::kStop);
  EXPECT_FALSE(s.last.stop_reason.has_value());
  EXPECT_EQ(s.joined, "The quick brown");

  // Text held back when EOS arrives is flushed: a possible stop-string start, and the detokenizer's
  // incomplete character (decode's U+FFFD, as Tokenizer::decode of the same ids gives).
  c.stop = {" brown bear"};
  const Streamed held = run(c, ids);
  EXPECT_EQ(held.deltas, (std::vector<std::string>{"The", " quick", "", " brown"}));
  const std::vector<int32_t> half_llama = {43, 3105, 9468, 99, kLlama3EndOfText};  // "Lama" + 2 of 🦙's 3 tokens
  const Streamed partial = run(c, half_llama);
  EXPECT_EQ(partial.last.reason, FinishReason::kStop);
  EXPECT_EQ(partial.joined, llama3().decode(prefix(half_llama, 4), false));
  EXPECT_EQ(partial.joined, "Lama\xEF\xBF\xBD");
}

TEST(RequestOutput, IgnoreEosKeepsGoingAndShowsTheEosText) {
  auto ids = ids_of(kFox);
  ids.insert(ids.begin() + 3, kLlama3EotId);
  StopConditions c = conditions(static_cast<int64_t>(ids.size()));
  c.eos_token_ids = {kLlama3EotId};
  c.ignore_eos = true;
  c.skip_special_tokens = false;
  const Streamed s = run(c, ids);
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
  EXPECT_EQ(s.joined, llama3().decode(ids, false));
  EXPECT_NE(s.joined.find("<|eot_id|>"), std::string::npos);
  // A stop token id still stops when EOS is ignored.
  c.stop_token_ids = {kLlama3EotId};
  const Streamed stopped = run(c, ids);
  EXPECT_EQ(stopped.joined, "The quick brown");
  ASSERT_TRUE(stopped.last.stop_reason.has_value());
  EXPECT_EQ(std::get<int32_t>(*stopped.last.stop_reason), kLlama3EotId);
}

TEST(RequestOutput, StopTokenIdSetsStopReasonAndIsNotEmitted) {
  const auto ids = ids_of(kFox + " More text.");
  StopConditions c = conditions(32);
  c.stop_token_ids = {kLlama3Period};
  const Streamed s = run(c, ids);
  ASSERT_EQ(s.deltas.size(), 10u);
  EXPECT_EQ(s.last.reason, FinishReason::kStop);
  ASSERT_TRUE(s.last.stop_reason.has_value());
  ASSERT_TRUE(std::holds_alternative<int32_t>(*s.last.stop_reason));
  EXPECT_EQ(std::get<int32_t>(*s.last.stop_reason), kLlama3Period);
  EXPECT_EQ(s.joined, llama3().decode(prefix(ids, 9), true));
  EXPECT_EQ(s.joined, "The quick brown fox jumps over the lazy dog");
  // EOS is checked first: an id in both lists is an EOS (no stop_reason).
  c.eos_token_ids = {kLlama3Period};
  const Streamed eos = run(c, ids);
  EXPECT_EQ(eos.last.reason, FinishReason::kStop);
  EXPECT_FALSE(eos.last.stop_reason.has_value());
}

// min_tokens gates EOS, stop ids and stop strings alike; the token that brings the count to
// min_tokens may stop (vLLM's scheduler rule; see may_stop() in request_output.cpp).
TEST(RequestOutput, MinTokensSuppressesEosStopIdsAndStopStrings) {
  const int32_t the = ids_of("The")[0], quick = ids_of(" quick")[0];
  StopConditions c = conditions(16);
  c.min_tokens = 3;
  c.eos_token_ids = {kLlama3EotId};
  c.skip_special_tokens = false;
  {
    const Streamed s = run(c, {the, kLlama3EotId, quick, kLlama3EotId, the});
    ASSERT_EQ(s.deltas.size(), 4u);
    EXPECT_EQ(s.last.reason, FinishReason::kStop);
    EXPECT_EQ(s.joined, "The<|eot_id|> quick");  // the early EOS is an ordinary token
    const Streamed at_min = run(c, {the, quick, kLlama3EotId, the});
    EXPECT_EQ(at_min.deltas.size(), 3u);
    EXPECT_EQ(at_min.joined, "The quick");
  }
  {
    StopConditions ids_only = c;
    ids_only.stop_token_ids = {kLlama3Period};
    const Streamed s = run(ids_only, {the, kLlama3Period, quick, kLlama3Period, the});
    ASSERT_EQ(s.deltas.size(), 4u);
    EXPECT_EQ(std::get<int32_t>(*s.last.stop_reason), kLlama3Period);
    EXPECT_EQ(s.joined, "The. quick");
  }
  {
    // "The quick" completes at token 2 (< min_tokens): no match; its second occurrence matches.
    StopConditions strings = c;
    strings.stop = {"The quick"};
    const auto ids = ids_of("The quick brown fox. The quick end");
    const Streamed s = run(strings, ids);
    expect_stop_string(s, "The quick");
    EXPECT_EQ(s.joined, "The quick brown fox. ");
    // A match may start before min_tokens and end at or after it.
    strings.stop = {" quick brown"};
    const Streamed spanning = run(strings, ids);
    expect_stop_string(spanning, " quick brown");
    EXPECT_EQ(spanning.deltas.size(), 3u);
    EXPECT_EQ(spanning.joined, "The");
    // min_tokens == max_tokens: nothing stops before the end, which may still be a stop.
    strings.stop = {"."};
    strings.min_tokens = strings.max_tokens = 5;
    const Streamed late = run(strings, ids);
    EXPECT_EQ(late.deltas.size(), 5u);
    expect_stop_string(late, ".");
    EXPECT_EQ(late.joined, "The quick brown fox");
  }
}

// Checks a request's final text against a string search on decode(ids): the first occurrence of
// `stop` (a single stop string, so the first occurrence is also the first completed).
void expect_cut_at_first_occurrence(const Tokenizer& tok, const std::vector<int32_t>& ids, const std::string& stop,
                                    bool include, const std::string& where) {
  StopConditions c = conditions(static_cast<int64_t>(ids.size()));
  c.stop = {stop};
  c.include_stop_str_in_output = include;
  RequestOutputProcessor p(&tok, c);
  const Streamed s = feed(p, ids);
  const std::string full = tok.decode(ids, true);
  const size_t pos = full.find(stop);
  if (pos == std::string::npos) {
    EXPECT_EQ(s.last.reason, FinishReason::kLength) << where;
    EXPECT_EQ(s.joined, full) << where;
    return;
  }
  expect_stop_string(s, stop);
  EXPECT_EQ(s.joined, full.substr(0, pos + (include ? stop.size() : 0))) << where << " stop '" << stop << "'";
}

TEST(RequestOutput, StopStringAcrossTokensAndInsideThem) {
  const auto ids = ids_of(kFox);
  for (const bool include : {false, true}) {
    StopConditions c = conditions(16);
    c.include_stop_str_in_output = include;
    // Begins inside " quick" and ends inside " brown".
    c.stop = {"ick bro"};
    const Streamed inside = run(c, ids);
    expect_stop_string(inside, "ick bro");
    EXPECT_EQ(inside.deltas.size(), 3u);
    EXPECT_EQ(inside.joined, include ? "The quick bro" : "The qu");
    // Spans three whole tokens.
    c.stop = {"quick brown fox"};
    const Streamed spanning = run(c, ids);
    EXPECT_EQ(spanning.deltas.size(), 4u);
    EXPECT_EQ(spanning.joined, include ? "The quick brown fox" : "The ");
    for (const std::string stop : {"ick bro", "quick brown fox", "e", "dog.", ".", "lazy dog", "fox jumps over t"})
      expect_cut_at_first_occurrence(llama3(), ids, stop, include, "fox");
  }
}

// The same search-based check on every golden line of every tokenizer, with stop strings cut from
// the decoded text at random character boundaries.
TEST(RequestOutput, StopStringOnGoldenLinesOfEveryTokenizer) {
  std::mt19937 rng(7);
  for (const std::string name : {"llama2", "llama3_1", "qwen3"}) {
    const Tokenizer& tok = fixture(name);
    int line = 0;
    for (const GoldenLine& g : golden(name)) {
      ++line;
      const std::string full = tok.decode(g.ids, true);
      if (g.ids.empty() || full.empty()) continue;
      std::vector<size_t> bounds;  // character boundaries of `full`
      for (size_t pos = 0; pos < full.size(); utf8::next_code_point(full, pos)) bounds.push_back(pos);
      bounds.push_back(full.size());
      for (int trial = 0; trial < 4; ++trial) {
        const size_t a = std::uniform_int_distribution<size_t>(0, bounds.size() - 2)(rng);
        const size_t b = std::min(bounds.size() - 1, a + 1 + std::uniform_int_distribution<size_t>(0, 5)(rng));
        const std::string stop = full.substr(bounds[a], bounds[b] - bounds[a]);
        expect_cut_at_first_occurrence(tok, g.ids, stop, trial % 2 == 1, name + " line " + std::to_string(line));
      }
    }
  }
}

TEST(RequestOutput, EarliestStopStringWins) {
  const auto ids = ids_of(kFox);
  StopConditions c = conditions(16);
  // "fox" completes at token 4, before "brown fox jumps" (token 5): the request ends there.
  c.stop = {"brown fox jumps", "lazy", "fox"};
  const Streamed first_done = run(c, ids);
  expect_stop_string(first_done, "fox");
  EXPECT_EQ(first_done.joined, "The quick brown ");
  // Both complete with " fox": the one starting earlier wins, whatever the list order.
  for (const auto& stops : {std::vector<std::string>{"ox", " brown f"}, std::vector<std::string>{" brown f", "ox"}}) {
    c.stop = stops;
    const Streamed s = run(c, ids);
    expect_stop_string(s, " brown f");
    EXPECT_EQ(s.joined, "The quick");
  }
  // Same start, both complete with " brown": the shorter was complete first.
  c.stop = {" brown", " bro"};
  c.include_stop_str_in_output = true;
  const Streamed shorter = run(c, ids);
  expect_stop_string(shorter, " bro");
  EXPECT_EQ(shorter.joined, "The quick bro");
}

TEST(RequestOutput, StopPrefixIsHeldBackUntilRuledOut) {
  const auto ids = ids_of("Hello world, this world is wide.");  // Hello| world|,| this| world| is| wide|.
  StopConditions c = conditions(static_cast<int64_t>(ids.size()));
  c.stop = {" worldwide"};
  const Streamed s = run(c, ids);
  EXPECT_EQ(s.deltas, (std::vector<std::string>{"Hello", "", " world,", " this", "", " world is", " wide", "."}));
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
  EXPECT_EQ(s.joined, llama3().decode(ids, true));
  // include_stop_str_in_output holds back the same way: the cut point still depends on the match.
  c.include_stop_str_in_output = true;
  EXPECT_EQ(run(c, ids).deltas, s.deltas);
  // Only the part that can still begin a stop string is held: "Hel" of "Hello" is streamed at once.
  c.include_stop_str_in_output = false;
  c.stop = {"lo Help"};
  const Streamed part = run(c, ids_of("Hello Help"));
  EXPECT_EQ(part.deltas, (std::vector<std::string>{"Hel", ""}));
  expect_stop_string(part, "lo Help");
  EXPECT_EQ(run(c, ids_of("Hello world")).deltas, (std::vector<std::string>{"Hel", "lo world"}));
}

TEST(RequestOutput, MultiByteTextAroundStops) {
  // 🦙 is three byte-level tokens here: Lama|🦙 (3 tokens)|🦙 (3 tokens)|Al|p|aka.
  const std::vector<int32_t> llamas = {43, 3105, 9468, 99, 247, 9468, 99, 247, 2149, 79, 13637};
  ASSERT_EQ(llama3().decode(llamas, true), "Lama🦙🦙Alpaka");
  StopConditions c = conditions(16);
  c.stop = {"🦙A"};
  const Streamed s = run(c, llamas);
  // The first 🦙 is held while it may begin "🦙A" and streamed once the second one rules it out.
  EXPECT_EQ(s.deltas, (std::vector<std::string>{"L", "ama", "", "", "", "", "", "🦙", ""}));
  expect_stop_string(s, "🦙A");
  EXPECT_EQ(s.joined, "Lama🦙");
  c.include_stop_str_in_output = true;
  EXPECT_EQ(run(c, llamas).joined, "Lama🦙🦙A");

  const auto german = ids_of("Grüße aus München 🙂 und 世界 ist groß.");  // Gr|ü|ße| aus| München| 🙂| und| 世界|...
  c.include_stop_str_in_output = false;
  c.stop = {"üß"};  // ends in the middle of the token "ße"
  EXPECT_EQ(run(c, german).joined, "Gr");
  c.stop = {"世界 ist", "🙂 und 世"};
  const Streamed cjk = run(c, german);
  expect_stop_string(cjk, "🙂 und 世");
  EXPECT_EQ(cjk.joined, "Grüße aus München ");
  c.stop = {"ß."};
  EXPECT_EQ(run(c, german).joined, "Grüße aus München 🙂 und 世界 ist gro");
}

// The detokenizer's held text is flushed when the request ends; a stop string it completes was
// complete before the EOS or the last token, so it wins (and the output is cut there).
TEST(RequestOutput, StopStringCompletedByTheFinalFlushWins) {
  const std::vector<int32_t> half_llama = {43, 3105, 9468, 99};  // "Lama" + an incomplete 🦙 → "Lama\uFFFD"
  StopConditions c = conditions(4);
  c.stop = {"a\xEF\xBF\xBD"};
  const Streamed by_length = run(c, half_llama);
  expect_stop_string(by_length, c.stop[0]);
  EXPECT_EQ(by_length.joined, "Lam");
  c.max_tokens = 16;
  c.eos_token_ids = {kLlama3EotId};
  std::vector<int32_t> with_eos = half_llama;
  with_eos.push_back(kLlama3EotId);
  const Streamed by_eos = run(c, with_eos);
  expect_stop_string(by_eos, c.stop[0]);
  EXPECT_EQ(by_eos.joined, "Lam");
}

TEST(RequestOutput, WithoutTokenizerOnlyIdsDecide) {
  StopConditions c = conditions(3);
  c.eos_token_ids = {2};
  c.stop_token_ids = {7};
  {
    RequestOutputProcessor p(nullptr, c);
    EXPECT_FALSE(p.push(5).finished);
    const OutputDelta d = p.push(2);
    EXPECT_TRUE(d.finished);
    EXPECT_EQ(d.reason, FinishReason::kStop);
    EXPECT_EQ(p.text(), "");
  }
  {
    RequestOutputProcessor p(nullptr, c);
    p.push(5);
    const OutputDelta d = p.push(7);
    EXPECT_EQ(std::get<int32_t>(*d.stop_reason), 7);
  }
  {
    RequestOutputProcessor p(nullptr, c);
    const Streamed s = feed(p, {5, 6, 8, 9});
    EXPECT_EQ(s.deltas.size(), 3u);
    EXPECT_EQ(s.last.reason, FinishReason::kLength);
  }
}

// ---- randomized: the processor against an oracle built only from Tokenizer::decode of prefixes.
//
// For a byte-level tokenizer the streamed text after k tokens (before hold-back) is decode(ids[:m])
// for the largest m <= k whose decode does not end in U+FFFD: an incomplete character decodes to
// U+FFFD and the stream waits for it. At step k (k >= min_tokens), an occurrence of a stop string
// that ends in the text new at this step is a match; the one starting earliest (then the shortest)
// ends the request. At max_tokens the whole decode is flushed and checked the same way. While the
// request runs, the streamed text is that text less its longest suffix that is a proper prefix of a
// stop string.

struct Expected {
  std::vector<std::string> streamed;  // text() after each push
  int64_t pushes = 0;
  FinishReason reason = FinishReason::kNone;
  std::string stop;  // the matching stop string, when one ends it
  bool held = false;  // some step held back a possible stop-string start
};

// The earliest-starting (then shortest) occurrence in `text` that ends after `after`; found by
// enumerating every occurrence.
bool first_match(const std::string& text, size_t after, const std::vector<std::string>& stops, size_t& pos,
                 std::string& which) {
  bool found = false;
  for (const std::string& s : stops)
    for (size_t p = 0; p + s.size() <= text.size(); ++p)
      if (text.compare(p, s.size(), s) == 0 && p + s.size() > after &&
          (!found || p < pos || (p == pos && s.size() < which.size()))) {
        found = true;
        pos = p;
        which = s;
      }
  return found;
}

Expected oracle(const Tokenizer& tok, const std::vector<int32_t>& ids, const StopConditions& c) {
  std::vector<std::string> text = {""};  // text[k]: the detokenized text after k tokens
  for (size_t k = 1; k <= ids.size(); ++k) {
    const std::string d = tok.decode(prefix(ids, k), true);
    const bool incomplete = d.size() >= 3 && d.compare(d.size() - 3, 3, utf8::kReplacement) == 0;
    text.push_back(incomplete ? text.back() : d);
    EXPECT_EQ(text[k].compare(0, text[k - 1].size(), text[k - 1]), 0) << "oracle: text must only grow";
  }
  Expected e;
  auto cut = [&](const std::string& t, size_t pos, const std::string& s) {
    e.reason = FinishReason::kStop;
    e.stop = s;
    e.streamed.push_back(t.substr(0, pos + (c.include_stop_str_in_output ? s.size() : 0)));
  };
  for (int64_t k = 1; k <= c.max_tokens; ++k) {
    e.pushes = k;
    size_t pos = 0;
    std::string s;
    const bool gate = k >= c.min_tokens;
    if (gate && first_match(text[k], text[k - 1].size(), c.stop, pos, s)) {
      cut(text[k], pos, s);
      return e;
    }
    if (k == c.max_tokens) {
      const std::string all = tok.decode(prefix(ids, k), true);
      if (gate && first_match(all, text[k].size(), c.stop, pos, s)) {
        cut(all, pos, s);
      } else {
        e.reason = FinishReason::kLength;
        e.streamed.push_back(all);
      }
      return e;
    }
    size_t keep = 0;
    for (const std::string& st : c.stop)
      for (size_t len = 1; len < st.size() && len <= text[k].size(); ++len)
        if (text[k].compare(text[k].size() - len, len, st, 0, len) == 0) keep = std::max(keep, len);
    e.held = e.held || keep > 0;
    e.streamed.push_back(text[k].substr(0, text[k].size() - keep));
  }
  return e;
}

TEST(RequestOutput, RandomStreamsMatchAnIndependentOracle) {
  std::mt19937 rng(2024);
  std::map<FinishReason, int> reasons;  // the trials must exercise both endings...
  int held_back = 0;                    // ...and the hold-back
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (const std::string name : {"llama3_1", "qwen3"}) {  // byte-level: the oracle's rule above holds
    const Tokenizer& tok = fixture(name);
    const auto lines = golden(name);
    for (int trial = 0; trial < 500; ++trial) {
      // Natural text with random ids (multi-byte pieces, special tokens) mixed in.
      std::vector<int32_t> ids;
      while (ids.size() < 8) {
        const auto& line = lines[static_cast<size_t>(uniform(0, static_cast<int64_t>(lines.size()) - 1))].ids;
        ids.insert(ids.end(), line.begin(), line.end());
      }
      ids.resize(static_cast<size_t>(uniform(1, std::min<int64_t>(40, static_cast<int64_t>(ids.size())))));
      const int64_t noise = uniform(0, 3);  // 0: none; else about one id in 2^noise is replaced
      for (int32_t& id : ids)
        if (noise > 0 && uniform(0, (1 << noise) - 1) == 0) id = static_cast<int32_t>(uniform(0, tok.vocab_size() - 1));

      const std::string full = tok.decode(ids, true);
      std::vector<size_t> bounds;
      for (size_t pos = 0; pos < full.size(); utf8::next_code_point(full, pos)) bounds.push_back(pos);
      bounds.push_back(full.size());
      StopConditions c;
      const int64_t n = static_cast<int64_t>(ids.size());
      c.min_tokens = uniform(0, 2) == 0 ? uniform(0, n) : 0;
      c.max_tokens = uniform(std::max<int64_t>(1, c.min_tokens), n);
      c.include_stop_str_in_output = uniform(0, 1) == 1;
      for (int64_t i = uniform(1, 3); i > 0; --i) {
        if (bounds.size() < 2 || uniform(0, 4) == 0) {
          c.stop.push_back(uniform(0, 1) ? "zq" : " ");
          continue;
        }
        const size_t a = static_cast<size_t>(uniform(0, static_cast<int64_t>(bounds.size()) - 2));
        const size_t b = std::min(bounds.size() - 1, a + static_cast<size_t>(uniform(1, 6)));
        c.stop.push_back(full.substr(bounds[a], bounds[b] - bounds[a]));
      }

      const Expected want = oracle(tok, ids, c);
      RequestOutputProcessor p(&tok, c);
      const Streamed got = feed(p, ids);
      const std::string where = name + " trial " + std::to_string(trial);
      ASSERT_EQ(static_cast<int64_t>(got.deltas.size()), want.pushes) << where;
      ASSERT_EQ(want.streamed.size(), got.deltas.size()) << where;
      std::string joined;
      for (size_t k = 0; k < got.deltas.size(); ++k) {
        joined += got.deltas[k];
        ASSERT_EQ(joined, want.streamed[k]) << where << " after push " << k + 1;
      }
      EXPECT_EQ(got.last.reason, want.reason) << where;
      ++reasons[want.reason];
      held_back += want.held;
      if (want.reason == FinishReason::kStop) {
        ASSERT_TRUE(got.last.stop_reason.has_value()) << where;
        EXPECT_EQ(std::get<std::string>(*got.last.stop_reason), want.stop) << where;
      } else {
        EXPECT_FALSE(got.last.stop_reason.has_value()) << where;
      }
    }
  }
  EXPECT_GT(reasons[FinishReason::kStop], 300);
  EXPECT_GT(reasons[FinishReason::kLength], 300);
  EXPECT_GT(held_back, 200);
}

}  // namespace
}  // namespace fg
