// tests/test_tool_call_parser.cpp — server/tool_call_parser: Llama 3.x JSON and Hermes (Qwen) tool
// calls, and the required/named shapes, parsed whole and streamed. The acceptance point: streamed
// at every byte, one byte at a time and at random cuts, each call's name arrives first and its
// argument pieces join to exactly the non-streamed arguments; text that is not calls is content.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "server/reasoning_parser.h"
#include "server/tool_call_json.h"
#include "server/tool_call_parser.h"

namespace fg::server {
namespace {

using Format = ToolCallFormat;

// Ids from a counter, so that a stream's ids can be compared with the whole parse's.
ToolCallOptions counted_ids(std::string function_name = "") {
  auto next = std::make_shared<int>(0);
  ToolCallOptions options;
  options.function_name = std::move(function_name);
  options.make_id = [next] { return "call-" + std::to_string((*next)++); };
  return options;
}

struct Streamed {
  std::string content;
  std::vector<ToolCall> calls;
  bool failed = false;
};

// Feeds `pieces`, checking the shape of the deltas as they come: a call's first delta (id, name,
// empty arguments) before its argument pieces, calls opened in index order, argument pieces only
// for the call last opened.
Streamed stream_pieces(Format format, const std::vector<std::string>& pieces, const ToolCallOptions& options) {
  ToolCallStream stream(format, options);
  Streamed out;
  auto take = [&](const ToolStreamDelta& delta) {
    out.content += delta.content;
    for (const ToolCallDelta& call : delta.tool_calls) {
      if (call.opens_call()) {
        EXPECT_EQ(call.index, static_cast<int>(out.calls.size()));
        EXPECT_FALSE(call.name.empty());
        EXPECT_EQ(call.arguments, "");
        out.calls.push_back({call.id, call.name, ""});
      } else {
        EXPECT_EQ(call.index + 1, static_cast<int>(out.calls.size())) << "arguments before the call's name";
        EXPECT_FALSE(call.arguments.empty());
        if (call.index < static_cast<int>(out.calls.size())) out.calls[call.index].arguments += call.arguments;
      }
    }
  };
  for (const std::string& piece : pieces) take(stream.feed(piece));
  take(stream.finish());
  out.failed = stream.failed();
  EXPECT_EQ(stream.calls_sent(), static_cast<int>(out.calls.size()));
  return out;
}

// The stream of `pieces` must give what the whole parse gives.
void expect_stream_matches(Format format, const std::string& text, const std::vector<std::string>& pieces,
                           const std::string& function_name = "") {
  const ToolCallParse whole = parse_tool_calls(format, text, counted_ids(function_name));
  const Streamed streamed = stream_pieces(format, pieces, counted_ids(function_name));
  ASSERT_EQ(streamed.calls.size(), whole.calls.size()) << text;
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    EXPECT_EQ(streamed.calls[i].id, whole.calls[i].id);
    EXPECT_EQ(streamed.calls[i].name, whole.calls[i].name);
    ASSERT_EQ(streamed.calls[i].arguments, whole.calls[i].arguments) << text;
  }
  ASSERT_EQ(streamed.content, whole.content.value_or("")) << text;
}

void expect_every_chunking_matches(Format format, const std::string& text, const std::string& function_name = "") {
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_stream_matches(format, text, {text.substr(0, cut), text.substr(cut)}, function_name);
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  expect_stream_matches(format, text, bytes, function_name);
  std::mt19937 rng(static_cast<unsigned>(text.size()));
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::uniform_int_distribution<size_t>(0, 9)(rng);
      pieces.push_back(text.substr(at, n));
      at += n;
    }
    SCOPED_TRACE("random cuts, trial " + std::to_string(trial));
    expect_stream_matches(format, text, pieces, function_name);
  }
}

// --- Llama 3.x JSON ----------------------------------------------------------------------------

// What Llama-3.1-8B-Instruct and Llama-3.2-3B-Instruct write for a tool call.
const std::string kLlamaWeather =
    R"({"name": "get_current_weather", "parameters": {"location": "San Francisco, CA", "unit": "fahrenheit"}})";
const std::string kLlamaPythonTag =
    R"(<|python_tag|>{"name": "brave_search", "parameters": {"query": "current weather in Menlo Park"}})";
const std::string kLlamaTwo =
    "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"get_time\", \"arguments\": "
    "{\"timezone\": \"Europe/Paris\", \"format\": 24}}";
const std::string kLlamaNested =
    R"({"name": "search_products", "parameters": {"filter": {"range": {"min": 1, "max": 10}}, "tags": ["a", "b"], "deep": [[{"x": null}]]}})";
const std::string kLlamaScalars =
    R"({"name": "note", "parameters": {"city": "Zürich", "note": "你好 \"quoted\" \\ back\n", "n": 0.1, "big": 12345678901234567890, "neg": -7, "f": 2.5e-3, "t": true}})";

TEST(ToolCallParser, NamesAreVllms) {
  EXPECT_EQ(tool_call_parser_from_name("llama3_json"), Format::kLlama3Json);
  EXPECT_EQ(tool_call_parser_from_name("hermes"), Format::kHermes);
  EXPECT_EQ(tool_call_parser_from_name("mistral"), std::nullopt);
  EXPECT_EQ(tool_call_parser_names().size(), 2u);
}

TEST(ToolCallParser, IdsAreVllmsShape) {
  const std::string id = make_tool_call_id();
  ASSERT_EQ(id.size(), 14u + 32u);
  EXPECT_EQ(id.substr(0, 14), "chatcmpl-tool-");
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 14), std::string::npos);
  EXPECT_NE(make_tool_call_id(), id);
  // The parsers use it unless told otherwise.
  const ToolCallParse parse = parse_tool_calls(Format::kLlama3Json, kLlamaWeather);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].id.substr(0, 14), "chatcmpl-tool-");
}

TEST(ToolCallParser, Llama3JsonSingleCall) {
  const ToolCallParse parse = parse_tool_calls(Format::kLlama3Json, kLlamaWeather, counted_ids());
  EXPECT_EQ(parse.content, std::nullopt);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].id, "call-0");
  EXPECT_EQ(parse.calls[0].name, "get_current_weather");
  // What vLLM's json.dumps(arguments, ensure_ascii=False) writes.
  EXPECT_EQ(parse.calls[0].arguments, R"({"location": "San Francisco, CA", "unit": "fahrenheit"})");
}

TEST(ToolCallParser, Llama3JsonPythonTagAndWhitespace) {
  const ToolCallParse parse = parse_tool_calls(Format::kLlama3Json, "\n " + kLlamaPythonTag + "\n");
  EXPECT_EQ(parse.content, std::nullopt);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].name, "brave_search");
  EXPECT_EQ(parse.calls[0].arguments, R"({"query": "current weather in Menlo Park"})");
}

TEST(ToolCallParser, Llama3JsonSeveralCallsAndArgumentsKey) {
  const ToolCallParse parse = parse_tool_calls(Format::kLlama3Json, kLlamaTwo + ";", counted_ids());
  ASSERT_EQ(parse.calls.size(), 2u);
  EXPECT_EQ(parse.calls[0].name, "get_weather");
  EXPECT_EQ(parse.calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_EQ(parse.calls[1].id, "call-1");
  EXPECT_EQ(parse.calls[1].name, "get_time");
  EXPECT_EQ(parse.calls[1].arguments, R"({"timezone": "Europe/Paris", "format": 24})");
}

TEST(ToolCallParser, ArgumentsAreCanonicalJson) {
  // Nested three deep (vLLM's regex stops at two), key order kept, scalars as Python writes them.
  ToolCallParse parse = parse_tool_calls(Format::kLlama3Json, kLlamaNested);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].arguments,
            R"({"filter": {"range": {"min": 1, "max": 10}}, "tags": ["a", "b"], "deep": [[{"x": null}]]})");
  parse = parse_tool_calls(Format::kLlama3Json, kLlamaScalars);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(
      parse.calls[0].arguments,
      R"({"city": "Zürich", "note": "你好 \"quoted\" \\ back\n", "n": 0.1, "big": 12345678901234567890, "neg": -7, "f": 0.0025, "t": true})");
  // Whitespace of the model's own is not kept.
  parse = parse_tool_calls(Format::kLlama3Json, "{\"name\":\"f\",\"parameters\":{\n  \"a\" :[ ],\"b\":{ }\n}}");
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].arguments, R"({"a": [], "b": {}})");
}

TEST(ToolCallParser, Llama3JsonThatIsNotACallIsContent) {
  const std::vector<std::string> texts = {
      "The weather in Paris is sunny.",
      R"({"name": "get_weather"})",                              // no arguments
      R"({"name": "get_weather", "parameters": "Paris"})",       // arguments not an object
      R"({"name": 3, "parameters": {}})",                        // name not a string
      R"({"name": "f", "parameters": {}, "arguments": {}})",     // both keys
      R"({"answer": 42})",                                       // JSON, not a call
      R"({"name": "get_weather", "parameters": {"city": "Par)",  // cut by max_tokens
      R"(Here you go: {"name": "f", "parameters": {}})",         // text first
      R"({"name": "f", "parameters": {}} and then some words)",  // text after
      R"({"name": "f", "parameters": {}}; oops)",
      R"({"name": "f", "parameters": {"a": 01}})",  // not JSON
      "<|python_tag|>print('hello')",
      "<|python_ta",
      "{",
      "",
      "  \n",
  };
  for (const std::string& text : texts) {
    const ToolCallParse parse = parse_tool_calls(Format::kLlama3Json, text);
    EXPECT_TRUE(parse.calls.empty()) << text;
    EXPECT_EQ(parse.content, text);
  }
}

TEST(ToolCallParser, Llama3JsonStreamsAtEveryChunking) {
  for (const std::string& text :
       {kLlamaWeather, kLlamaPythonTag, kLlamaTwo, kLlamaTwo + " ; ", kLlamaNested, kLlamaScalars}) {
    SCOPED_TRACE(text);
    expect_every_chunking_matches(Format::kLlama3Json, text);
  }
  // Texts that are not calls stream as content, all of them.
  for (const std::string text : {"The weather in Paris is sunny.", R"({"answer": 42})", R"({"name": "f"})",
                                 R"({"name": "f", "parameters": 5})", "<|python_tag|>print(1)", "{\"na"}) {
    SCOPED_TRACE(text);
    expect_every_chunking_matches(Format::kLlama3Json, text);
  }
}

TEST(ToolCallParser, NameComesFirstThenArgumentsInPieces) {
  ToolCallStream stream(Format::kLlama3Json, counted_ids());
  EXPECT_TRUE(stream.feed(R"({"name": "get_weather")").empty());  // no arguments yet: maybe not a call
  ToolStreamDelta d = stream.feed(R"(, "parameters": {"city")");
  ASSERT_EQ(d.tool_calls.size(), 2u);
  EXPECT_EQ(d.tool_calls[0].id, "call-0");
  EXPECT_EQ(d.tool_calls[0].name, "get_weather");
  EXPECT_EQ(d.tool_calls[0].arguments, "");
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"city": )");
  d = stream.feed(R"(: "Paris", "days": 1)");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, R"("Paris", "days": )");  // 1 may go on: held
  d = stream.feed("0}}");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, "10}");
  EXPECT_TRUE(stream.finish().empty());
  EXPECT_EQ(stream.calls_sent(), 1);
  EXPECT_FALSE(stream.failed());
}

TEST(ToolCallParser, NameAfterArgumentsStillComesFirst) {
  const std::string text = R"({"parameters": {"q": "x"}, "name": "search"})";
  const ToolCallParse parse = parse_tool_calls(Format::kLlama3Json, text);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].name, "search");
  EXPECT_EQ(parse.calls[0].arguments, R"({"q": "x"})");
  expect_every_chunking_matches(Format::kLlama3Json, text);
}

TEST(ToolCallParser, ABrokenLaterCallKeepsTheCallsSent) {
  // A stream cannot take a call back: the first call stays, the rest goes out as content, while
  // the whole parse refuses all of it, as vLLM's does.
  const std::string text = kLlamaWeather + R"(; {"name": "get_time", "parameters": {"tz": )";
  const ToolCallParse whole = parse_tool_calls(Format::kLlama3Json, text);
  EXPECT_TRUE(whole.calls.empty());
  EXPECT_EQ(whole.content, text);
  const Streamed streamed = stream_pieces(Format::kLlama3Json, {text}, counted_ids());
  EXPECT_TRUE(streamed.failed);
  ASSERT_EQ(streamed.calls.size(), 2u);
  EXPECT_EQ(streamed.calls[0].arguments, R"({"location": "San Francisco, CA", "unit": "fahrenheit"})");
  EXPECT_EQ(streamed.calls[1].arguments, R"({"tz": )");
  EXPECT_EQ(streamed.content, R"(; {"name": "get_time", "parameters": {"tz": )");
}

// --- Hermes (Qwen2.5 / Qwen3) -----------------------------------------------------------------

// Qwen2.5-7B-Instruct's answer to "What's the temperature in San Francisco now and tomorrow?"
// (Qwen's function-calling guide).
const std::string kQwenTwo =
    "<tool_call>\n{\"name\": \"get_current_temperature\", \"arguments\": {\"location\": \"San Francisco, CA, "
    "USA\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_temperature_date\", \"arguments\": {\"location\": \"San "
    "Francisco, CA, USA\", \"date\": \"2024-10-01\"}}\n</tool_call>";
const std::string kQwenWithContent =
    "I'll look up the current weather in Tokyo for you.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Tokyo\", \"unit\": \"celsius\"}}\n</tool_call>";
const std::string kQwenTagInString =
    "<tool_call>\n{\"name\": \"echo\", \"arguments\": {\"text\": \"</tool_call> is a tag\"}}\n</tool_call>";
const std::string kQwenUnterminated =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Berlin\"}}\n";
const std::string kQwenNoArguments = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

TEST(ToolCallParser, HermesTwoCalls) {
  const ToolCallParse parse = parse_tool_calls(Format::kHermes, kQwenTwo, counted_ids());
  EXPECT_EQ(parse.content, std::nullopt);
  ASSERT_EQ(parse.calls.size(), 2u);
  EXPECT_EQ(parse.calls[0].name, "get_current_temperature");
  EXPECT_EQ(parse.calls[0].arguments, R"({"location": "San Francisco, CA, USA"})");
  EXPECT_EQ(parse.calls[1].name, "get_temperature_date");
  EXPECT_EQ(parse.calls[1].arguments, R"({"location": "San Francisco, CA, USA", "date": "2024-10-01"})");
}

TEST(ToolCallParser, HermesContentBeforeTheCalls) {
  const ToolCallParse parse = parse_tool_calls(Format::kHermes, kQwenWithContent);
  EXPECT_EQ(parse.content, "I'll look up the current weather in Tokyo for you.\n");
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].arguments, R"({"city": "Tokyo", "unit": "celsius"})");
}

TEST(ToolCallParser, HermesEdgeCases) {
  ToolCallParse parse = parse_tool_calls(Format::kHermes, kQwenTagInString);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].arguments, R"({"text": "</tool_call> is a tag"})");
  parse = parse_tool_calls(Format::kHermes, kQwenUnterminated);  // EOS came before </tool_call>
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].arguments, R"({"city": "Berlin"})");
  parse = parse_tool_calls(Format::kHermes, kQwenNoArguments);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].arguments, "{}");
  // Text between and after the blocks is dropped, as vLLM drops it.
  parse = parse_tool_calls(Format::kHermes, kQwenWithContent + "\nLet me know!\n" + kQwenNoArguments + " bye");
  EXPECT_EQ(parse.content, "I'll look up the current weather in Tokyo for you.\n");
  ASSERT_EQ(parse.calls.size(), 2u);
  EXPECT_EQ(parse.calls[1].name, "get_time");
}

TEST(ToolCallParser, HermesThatIsNotACallIsContent) {
  const std::vector<std::string> texts = {
      "The capital of France is Paris.",
      "",
      "I will use <tool_call> later.",
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>",
      "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_cal",
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {}} trailing\n</tool_call>",
      "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Ber",
      "<tool_call>",
      "<tool_",
  };
  for (const std::string& text : texts) {
    const ToolCallParse parse = parse_tool_calls(Format::kHermes, text);
    EXPECT_TRUE(parse.calls.empty()) << text;
    EXPECT_EQ(parse.content, text);
  }
}

TEST(ToolCallParser, HermesStreamsAtEveryChunking) {
  for (const std::string& text : {kQwenTwo, kQwenWithContent, kQwenTagInString, kQwenUnterminated, kQwenNoArguments,
                                  kQwenWithContent + "\nLet me know!\n" + kQwenNoArguments + " bye"}) {
    SCOPED_TRACE(text);
    expect_every_chunking_matches(Format::kHermes, text);
  }
  for (const std::string text : {"The capital of France is Paris.", "I will use <tool_call> later.",
                                 "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "a <tool_ b <tool_call",
                                 "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"argu"}) {
    SCOPED_TRACE(text);
    expect_every_chunking_matches(Format::kHermes, text);
  }
}

TEST(ToolCallParser, HermesCutInsideACallSentKeepsIt) {
  // max_tokens cut the call after its name went out: the stream keeps it and sends the block's raw
  // text as content; the whole parse gives all of the text as content.
  const std::string text = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Ber";
  EXPECT_EQ(parse_tool_calls(Format::kHermes, text).content, text);
  const Streamed streamed = stream_pieces(Format::kHermes, {text.substr(0, 20), text.substr(20)}, counted_ids());
  EXPECT_TRUE(streamed.failed);
  ASSERT_EQ(streamed.calls.size(), 1u);
  EXPECT_EQ(streamed.calls[0].arguments, R"({"city": )");
  EXPECT_EQ(streamed.content, text);
}

TEST(ToolCallParser, HermesContentStreamsBeforeTheCall) {
  ToolCallStream stream(Format::kHermes, counted_ids());
  EXPECT_EQ(stream.feed("Checking <to").content, "Checking ");  // "<to" may open a block
  ToolStreamDelta d = stream.feed("ol_call>\n{\"name\": \"f\", \"arguments\": {\"x\": true}}");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.tool_calls.size(), 2u);
  EXPECT_EQ(d.tool_calls[0].name, "f");
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"x": true})");
  EXPECT_TRUE(stream.feed("\n</tool_call>").empty());
  EXPECT_TRUE(stream.finish().empty());
}

// --- required and named (the grammar's shapes) -----------------------------------------------

TEST(ToolCallParser, RequiredArray) {
  const std::string text =
      R"([{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time", "parameters": {}}])";
  const ToolCallParse parse = parse_tool_calls(Format::kRequired, text);
  EXPECT_EQ(parse.content, std::nullopt);
  ASSERT_EQ(parse.calls.size(), 2u);
  EXPECT_EQ(parse.calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_EQ(parse.calls[1].name, "get_time");
  EXPECT_EQ(parse.calls[1].arguments, "{}");
  expect_every_chunking_matches(Format::kRequired, text);
  for (const std::string bad : {"[]", "[", R"([{"name": "f", "parameters": {}},])",
                                R"([{"name": "f", "parameters": {}}] x)", R"({"name": "f", "parameters": {}})"}) {
    EXPECT_EQ(parse_tool_calls(Format::kRequired, bad).content, bad);
  }
  for (const std::string bad : {"[]", "[", R"({"name": "f", "parameters": {}})"}) {  // broken before any call
    expect_every_chunking_matches(Format::kRequired, bad);
  }
}

TEST(ToolCallParser, NamedArgumentsObject) {
  const std::string text = "{\"city\": \"Paris\",\n \"days\": 3}";
  const ToolCallParse parse = parse_tool_calls(Format::kNamed, text, counted_ids("get_forecast"));
  EXPECT_EQ(parse.content, std::nullopt);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].name, "get_forecast");
  EXPECT_EQ(parse.calls[0].arguments, R"({"city": "Paris", "days": 3})");
  expect_every_chunking_matches(Format::kNamed, text, "get_forecast");
  // The name goes out with the object's first byte.
  ToolCallStream stream(Format::kNamed, counted_ids("get_forecast"));
  const ToolStreamDelta first = stream.feed("{");
  ASSERT_EQ(first.tool_calls.size(), 2u);
  EXPECT_EQ(first.tool_calls[0].name, "get_forecast");
  EXPECT_EQ(first.tool_calls[1].arguments, "{");
  EXPECT_EQ(parse_tool_calls(Format::kNamed, "[1]").content, "[1]");
  EXPECT_EQ(parse_tool_calls(Format::kNamed, "{} {}").content, "{} {}");
}

TEST(ToolCallParser, LongArgumentsStayLinearAndExact) {
  // A call far past the size scanned on every delta: pieces still join exactly.
  std::string body;
  for (int i = 0; i < 3000; ++i)
    body += (i ? ", " : "") + std::string("\"k") + std::to_string(i) + "\": " + std::to_string(i);
  const std::string text = "<tool_call>\n{\"name\": \"bulk\", \"arguments\": {" + body + "}}\n</tool_call>";
  const ToolCallParse whole = parse_tool_calls(Format::kHermes, text);
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0].arguments, "{" + body + "}");
  std::vector<std::string> pieces;
  for (size_t at = 0; at < text.size(); at += 3) pieces.push_back(text.substr(at, 3));
  expect_stream_matches(Format::kHermes, text, pieces);
}

TEST(ToolCallParser, AfterTheReasoningParser) {
  // Qwen3 thinks, then calls: the reasoning stream's content feeds the tool stream, cut anywhere.
  const std::string text =
      "<think>\nThe user wants the weather in Tokyo; I should call get_weather.\n</think>\n\n<tool_call>\n{\"name\": "
      "\"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}\n</tool_call>";
  const ReasoningSplit split = split_reasoning(ReasoningParserKind::kQwen3, text);
  ASSERT_TRUE(split.content);
  const ToolCallParse whole = parse_tool_calls(Format::kHermes, *split.content, counted_ids());
  EXPECT_EQ(split.reasoning, "\nThe user wants the weather in Tokyo; I should call get_weather.\n");
  EXPECT_EQ(whole.content, "\n\n");  // what precedes <tool_call>, as vLLM keeps it
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0].arguments, R"({"city": "Tokyo"})");
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    ReasoningStream reasoning(ReasoningParserKind::kQwen3);
    ToolCallStream tools(Format::kHermes, counted_ids());
    std::string reasoning_text, content, arguments, name;
    auto take = [&](const ReasoningDelta& r, const ToolStreamDelta& t) {
      reasoning_text += r.reasoning;
      content += t.content;
      for (const ToolCallDelta& call : t.tool_calls) {
        if (call.opens_call()) name = call.name;
        arguments += call.arguments;
      }
    };
    for (const std::string& piece : {text.substr(0, cut), text.substr(cut)}) {
      const ReasoningDelta r = reasoning.feed(piece);
      take(r, tools.feed(r.content));
    }
    const ReasoningDelta r = reasoning.finish();
    ToolStreamDelta t = tools.feed(r.content);
    const ToolStreamDelta tail = tools.finish();
    t.content += tail.content;
    t.tool_calls.insert(t.tool_calls.end(), tail.tool_calls.begin(), tail.tool_calls.end());
    take(r, t);
    ASSERT_EQ(reasoning_text, *split.reasoning) << cut;
    ASSERT_EQ(content, "\n\n") << cut;
    ASSERT_EQ(name, "get_weather") << cut;
    ASSERT_EQ(arguments, whole.calls[0].arguments) << cut;
  }
}

TEST(ToolCallJson, NumbersAtTheEndWaitForTheirLastDigit) {
  CallScan scan = scan_call(R"({"a": 12)", CallShape::kArguments);
  EXPECT_EQ(scan.state, CallScan::State::kIncomplete);
  EXPECT_EQ(scan.arguments, R"({"a": )");
  scan = scan_call(R"({"a": 12 )", CallShape::kArguments);
  EXPECT_EQ(scan.arguments, R"({"a": 12)");
  scan = scan_call(R"({"a": [1.5e)", CallShape::kArguments);
  EXPECT_EQ(scan.state, CallScan::State::kIncomplete);
  EXPECT_EQ(scan.arguments, R"({"a": [)");
  scan = scan_call(R"({"a": 1} tail)", CallShape::kArguments);
  EXPECT_EQ(scan.state, CallScan::State::kComplete);
  EXPECT_EQ(scan.end, 8u);
  EXPECT_EQ(scan_call(R"({"a": tru)", CallShape::kArguments).state, CallScan::State::kIncomplete);
  EXPECT_EQ(scan_call(R"({"a": trux)", CallShape::kArguments).state, CallScan::State::kMalformed);
}

}  // namespace
}  // namespace fg::server
