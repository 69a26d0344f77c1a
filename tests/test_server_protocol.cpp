// tests/test_server_protocol.cpp — the OpenAI protocol layer of the server without HTTP: request
// parsing and validation (what is accepted, and that every refusal names its field), the response
// and chunk shapes, logprob formats, SSE framing, and the API-key check. The built-in tokenizer
// and chat template stand in for a model's.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "server/api_key.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/sse_stream.h"
#include "server_test_support.h"
#include "tokenizer/builtin_tokenizer.h"

namespace fg::server {
namespace {

using nlohmann::json;

class Protocol : public testing::ModelFixture {};

TEST_F(Protocol, CompletionDefaultsAndTextPrompt) {
  const ParsedRequest r = completion({{"prompt", "hello world"}});
  EXPECT_EQ(r.model, "tiny");
  EXPECT_EQ(r.prompt, tokenizer_.encode("hello world", /*add_special_tokens=*/true));
  EXPECT_EQ(r.spec.stop.max_tokens, 16);  // OpenAI's default for completions
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.top_logprobs, -1);
  EXPECT_EQ(r.spec.sampling.num_logprobs, -1);
  EXPECT_FALSE(r.spec.has_seed);
}

TEST_F(Protocol, CompletionFieldsReachTheSpec) {
  const ParsedRequest r = completion({{"model", "alias"},
                                      {"prompt", {5, 6, 7}},
                                      {"max_tokens", 20},
                                      {"temperature", 0.5},
                                      {"top_k", 4},
                                      {"seed", 9},
                                      {"stop", "x"},
                                      {"stop_token_ids", {3}},
                                      {"ignore_eos", true},
                                      {"logprobs", 2},
                                      {"n", 3},
                                      {"best_of", 3},
                                      {"echo", false},
                                      {"logit_bias", json::object()},
                                      {"stream", true},
                                      {"stream_options", {{"include_usage", true}}},
                                      {"user", "u"},
                                      {"suffix", nullptr}});
  EXPECT_EQ(r.model, "tiny");  // the first served name is reported whatever alias was asked
  EXPECT_EQ(r.prompt, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(r.spec.stop.max_tokens, 20);
  EXPECT_FLOAT_EQ(r.spec.sampling.temperature, 0.5f);
  EXPECT_EQ(r.spec.sampling.top_k, 4);
  EXPECT_TRUE(r.spec.has_seed);
  EXPECT_EQ(r.spec.sampling.seed, 9);
  EXPECT_EQ(r.spec.stop.stop, (std::vector<std::string>{"x"}));
  EXPECT_EQ(r.spec.stop.stop_token_ids, (std::vector<int32_t>{3}));
  EXPECT_TRUE(r.spec.stop.ignore_eos);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_EQ(r.spec.sampling.num_logprobs, 2);
  EXPECT_EQ(r.n, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST_F(Protocol, OnePromptInAListIsThatPrompt) {
  EXPECT_EQ(completion({{"prompt", {"hi"}}}).prompt, completion({{"prompt", "hi"}}).prompt);
  EXPECT_EQ(completion({{"prompt", {{1, 2}}}}).prompt, (std::vector<int32_t>{1, 2}));
}

TEST_F(Protocol, ChatRendersTheTemplateAndDefaultsToTheRoomLeft) {
  const json messages = {
      {{"role", "developer"}, {"content", "be brief"}},
      {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}}};
  const ParsedRequest r = chat({{"messages", messages}, {"logprobs", true}, {"top_logprobs", 3}});
  const nlohmann::ordered_json normalized = normalize_chat_messages(messages);
  EXPECT_EQ(normalized[0]["role"], "system");   // developer is OpenAI's newer name for it
  EXPECT_EQ(normalized[1]["content"], "a\nb");  // text parts joined as vLLM joins them
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  EXPECT_EQ(r.prompt, tokenizer_.encode(chat_.render(normalized, options), /*add_special_tokens=*/false));
  EXPECT_EQ(r.spec.stop.max_tokens, model_.max_model_len - static_cast<int64_t>(r.prompt.size()));
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_EQ(chat({{"messages", messages}, {"logprobs", true}}).top_logprobs, 0);
  EXPECT_EQ(chat({{"messages", messages}, {"logprobs", false}}).top_logprobs, -1);
}

TEST_F(Protocol, ChatDefaultIsCappedByTheKvCache) {
  model_.usable_blocks = 4;  // 64 tokens
  const ParsedRequest r = chat({{"messages", {{{"role", "user"}, {"content", "x"}}}}});
  EXPECT_EQ(r.spec.stop.max_tokens, 64 + 1 - static_cast<int64_t>(r.prompt.size()));
}

struct BadCase {
  Endpoint endpoint;
  const char* body;
  int status;
  const char* param;
};

TEST_F(Protocol, EveryRefusalNamesItsField) {
  const Endpoint C = Endpoint::kCompletions, CH = Endpoint::kChatCompletions;
  const std::vector<BadCase> cases = {
      {C, R"({})", 400, "prompt"},
      {C, R"({"prompt": ""})", 400, "prompt"},
      {C, R"({"prompt": []})", 400, "prompt"},
      {C, R"({"prompt": [[]]})", 400, "prompt"},
      {C, R"({"prompt": {"a": 1}})", 400, "prompt"},
      {C, R"({"prompt": [1, 512]})", 400, "prompt"},
      {C, R"({"prompt": [1, -3]})", 400, "prompt"},
      {C, R"({"prompt": [1, 1e3]})", 400, "prompt"},
      {C, R"({"prompt": [1, 99999999999999999999]})", 400, "prompt"},
      {C, R"({"prompt": ["a", "b"]})", 400, "prompt"},
      {C, R"({"prompt": "hi", "max_tokens": 0})", 400, "max_tokens"},
      {C, R"({"prompt": "hi", "max_tokens": 300})", 400, "max_tokens"},
      {C, R"({"prompt": "hi", "max_completion_tokens": 300})", 400, "max_completion_tokens"},
      {C, R"({"prompt": "hi", "max_tokens": 1.5})", 400, "max_tokens"},
      {C, R"({"prompt": "hi", "max_tokens": true})", 400, "max_tokens"},
      {C, R"({"prompt": "hi", "temperature": 1e308})", 400, "temperature"},
      {C, R"({"prompt": "hi", "temperature": 1e-9})", 400, "temperature"},
      {C, R"({"prompt": "hi", "top_p": 0})", 400, "top_p"},
      {C, R"({"prompt": "hi", "min_p": -0.1})", 400, "min_p"},
      {C, R"({"prompt": "hi", "n": 0})", 400, "n"},
      {C, R"({"prompt": "hi", "n": 17})", 400, "n"},
      {C, R"({"prompt": "hi", "logprobs": 21})", 400, "logprobs"},
      {C, R"({"prompt": "hi", "logprobs": true})", 400, "logprobs"},
      {C, R"({"prompt": "hi", "stop_token_ids": [512]})", 400, "stop_token_ids"},
      {C, R"({"prompt": "hi", "echo": "yes"})", 400, "echo"},
      {C, R"({"prompt": "hi", "best_of": 2})", 400, "best_of"},
      {C, R"({"prompt": "hi", "suffix": "s"})", 400, "suffix"},
      {C, R"({"prompt": "hi", "logit_bias": {"1": 200}})", 400, "logit_bias"},
      {C, R"({"prompt": "hi", "logit_bias": {"512": 2}})", 400, "logit_bias"},
      {C, R"({"prompt": "hi", "logit_bias": [1]})", 400, "logit_bias"},
      {C, R"({"prompt": "hi", "stream_options": {"include_usage": true}})", 400, "stream_options"},
      {C, R"({"prompt": "hi", "stream": true, "stream_options": {"foo": 1}})", 400, "stream_options"},
      {C, R"({"prompt": "hi", "stream": true, "stream_options": 3})", 400, "stream_options"},
      {C, R"({"prompt": "hi", "frobnicate": 1})", 400, "frobnicate"},
      {C, R"({"prompt": "hi", "messages": []})", 400, "messages"},
      {C, R"({"prompt": "hi", "model": 3})", 400, "model"},
      {C, R"({"prompt": "hi", "model": "other"})", 404, "model"},
      {CH, R"({})", 400, "messages"},
      {CH, R"({"messages": {}})", 400, "messages"},
      {CH, R"({"messages": [3]})", 400, "messages[0]"},
      {CH, R"({"messages": [{"content": "x"}]})", 400, "messages[0].role"},
      {CH, R"({"messages": [{"role": "robot", "content": "x"}]})", 400, "messages[0].role"},
      {CH, R"({"messages": [{"role": "function", "content": "x"}]})", 400, "messages[0].role"},
      {CH, R"({"messages": [{"role": "user", "content": null}]})", 400, "messages[0].content"},
      {CH, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", 400, "messages[0].content[0].text"},
      {CH, R"({"messages": [{"role": "user", "content": [{"text": "a"}]}]})", 400, "messages[0].content[0].type"},
      {CH, R"({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]})", 400,
       "messages[0].content[0].type"},
      {CH, R"({"messages": [{"role": "user", "content": "x", "name": 3}]})", 400, "messages[0].name"},
      {CH, R"({"messages": [{"role": "user", "content": "x", "audio": {}}]})", 400, "messages[0].audio"},
      {CH, R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "function"}})", 400,
       "tool_choice.function"},
      {CH, R"({"messages": [{"role": "user", "content": "x"}], "function_call": "auto"})", 400, "function_call"},
      {CH, R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "text", "x": 1}})", 400,
       "response_format.x"},
      {CH, R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"tools": []}})", 400,
       "chat_template_kwargs"},
      {CH, R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})", 400, "logprobs"},
      {CH, R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 250})", 400, "max_tokens"},
  };
  for (const BadCase& c : cases) {
    try {
      parse_openai_request(c.endpoint, parse_json_body(c.body), model_);
      ADD_FAILURE() << "accepted: " << c.body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), c.status) << c.body << ": " << e.what();
      EXPECT_EQ(e.param(), c.param) << c.body << ": " << e.what();
      const nlohmann::ordered_json body = e.body();
      EXPECT_EQ(body["error"]["param"], c.param);
      EXPECT_EQ(body["error"]["message"], e.what());
      EXPECT_TRUE(body["error"].contains("type") && body["error"].contains("code"));
    }
  }
}

TEST_F(Protocol, ContextErrorsGiveBothLengths) {
  try {
    completion({{"prompt", std::vector<int32_t>(100, 7)}, {"max_tokens", 200}});
    FAIL();
  } catch (const ApiError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("256"), std::string::npos) << m;
    EXPECT_NE(m.find("300"), std::string::npos) << m;
    EXPECT_NE(m.find("100 in the prompt"), std::string::npos) << m;
  }
  model_.usable_blocks = 2;  // 32 tokens of cache
  try {
    completion({{"prompt", std::vector<int32_t>(20, 7)}, {"max_tokens", 20}});
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "max_tokens");
    EXPECT_NE(std::string(e.what()).find("KV-cache blocks"), std::string::npos) << e.what();
  }
}

TEST_F(Protocol, WithoutTokenizerOrTemplate) {
  model_.tokenizer = nullptr;
  model_.chat_template = nullptr;
  EXPECT_EQ(completion({{"prompt", {1, 2}}}).prompt, (std::vector<int32_t>{1, 2}));
  for (const json& body : {json{{"prompt", "text"}}, json{{"prompt", {1}}, {"stop", "x"}}}) {
    try {
      completion(body);
      ADD_FAILURE() << body.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
    }
  }
  EXPECT_THROW(chat({{"messages", {{{"role", "user"}, {"content", "x"}}}}}), ApiError);
}

TEST(ServerJsonBody, RefusesWhatIsNotAnObject) {
  for (const char* body :
       {"", "nope", "[1]", "3", "null", "{\"a\": NaN}", "{\"a\": 1} trailing", "{\"a\": \"\xff\"}"}) {
    try {
      parse_json_body(body);
      ADD_FAILURE() << body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "");
    }
  }
  const std::string deep = "{\"a\": " + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_THROW(parse_json_body(deep), ApiError);
  // Brackets inside strings do not count.
  const std::string text = "{\"a\": \"" + std::string(1000, '[') + "\"}";
  EXPECT_EQ(parse_json_body(text)["a"].get<std::string>().size(), 1000u);
}

TEST(ServerResponses, CompletionAndChatShapes) {
  const ResponseHeader h{"cmpl-1", 123, "tiny"};
  ChoiceOutput c;
  c.text = "ab";
  c.token_ids = {1, 2};
  c.finish_reason = FinishReason::kStop;
  c.stop_reason = std::string("x");
  const LogprobFormatter format(nullptr);
  const ojson r = completion_response(h, {c}, false, {3, 2}, format);
  EXPECT_EQ(
      r.dump(),
      R"({"id":"cmpl-1","object":"text_completion","created":123,"model":"tiny","choices":[{"index":0,"text":"ab",)"
      R"("logprobs":null,"finish_reason":"stop","stop_reason":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":2,)"
      R"("total_tokens":5}})");
  const ojson chat = chat_response(h, {c}, false, {3, 2}, format);
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"], (ojson{{"role", "assistant"}, {"content", "ab"}}));
  const ojson chunk = chat_chunk(h, 1, {{"content", "a"}}, nullptr, FinishReason::kNone, std::nullopt, true);
  EXPECT_EQ(chunk["object"], "chat.completion.chunk");
  EXPECT_TRUE(chunk.contains("usage") && chunk["usage"].is_null());
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  const ojson usage = usage_chunk(h, "text_completion", {3, 4});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 7);
}

TEST(ServerResponses, LogprobFormats) {
  const Tokenizer tokenizer = Tokenizer::from_json(builtin_tokenizer_json(), "built-in");
  const LogprobFormatter format(&tokenizer);
  const std::vector<int32_t> ids = tokenizer.encode("hi there", false);
  ASSERT_GE(ids.size(), 2u);
  std::vector<OutputLogprobs> lps(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    lps[i].token = ids[i];
    lps[i].in_text = true;
    lps[i].logprobs.logprob = -0.5f * static_cast<float>(i + 1);
    lps[i].logprobs.top = {{ids[i], lps[i].logprobs.logprob}, {7, -std::numeric_limits<float>::infinity()}};
  }
  LogprobFormatter::Cursor cursor = format.start();
  const ojson c = format.completion(lps, cursor);
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(c["text_offset"][i], static_cast<int64_t>(joined.size()));  // ASCII: bytes are characters
    joined += c["tokens"][i].get<std::string>();
    EXPECT_EQ(c["token_logprobs"][i], -0.5 * static_cast<double>(i + 1));
    EXPECT_EQ(c["top_logprobs"][i].size(), 2u);
  }
  EXPECT_EQ(joined, "hi there");  // token strings keep their spaces and join to the text
  cursor = format.start();
  const ojson content = format.chat_content(lps, cursor);
  ASSERT_EQ(content.size(), ids.size());
  EXPECT_EQ(content[0]["top_logprobs"][1]["logprob"], -9999.0);  // -inf has no JSON spelling
  const std::string token = content[1]["token"];
  EXPECT_EQ(content[1]["bytes"].size(), token.size());
  EXPECT_EQ(LogprobFormatter(nullptr).token_string(42, ""), "token_id:42");
}

TEST(ServerSse, StreamFraming) {
  const ResponseHeader h{"chatcmpl-9", 5, "tiny"};
  StreamFormatter chat(Endpoint::kChatCompletions, h, 2, -1, true, LogprobFormatter(nullptr));
  const std::string begin = chat.begin();
  EXPECT_EQ(begin.substr(0, 6), "data: ");
  size_t events = 0;
  for (size_t at = 0; (at = begin.find("\n\n", at)) != std::string::npos; at += 2) ++events;
  EXPECT_EQ(events, 2u);  // one role chunk per choice
  EXPECT_NE(begin.find(R"("delta":{"role":"assistant","content":""})"), std::string::npos);
  // A token whose text is held back still gets a chunk with empty content, as vLLM sends (clients
  // time tokens by chunks); a delta without tokens gets none.
  RequestOutput held;
  held.token_ids = {4};
  EXPECT_NE(chat.delta(0, held).find(R"("delta":{"content":""})"), std::string::npos);
  EXPECT_EQ(chat.delta(0, RequestOutput{}), "");
  RequestOutput last;
  last.token_ids = {5};
  last.text = "z";
  last.finished = true;
  last.finish_reason = FinishReason::kLength;
  const std::string event = chat.delta(1, last);
  EXPECT_NE(event.find(R"("index":1,"delta":{"content":"z"})"), std::string::npos) << event;
  EXPECT_NE(event.find(R"("finish_reason":"length")"), std::string::npos) << event;
  const std::string end = chat.end({2, 3});
  EXPECT_EQ(end.substr(end.size() - kSseDone.size()), kSseDone);
  EXPECT_NE(end.find(R"("choices":[],"usage":{"prompt_tokens":2)"), std::string::npos) << end;
  StreamFormatter plain(Endpoint::kCompletions, h, 1, -1, false, LogprobFormatter(nullptr));
  EXPECT_EQ(plain.begin(), "");
  EXPECT_EQ(plain.end({1, 1}), std::string(kSseDone));
}

TEST(ServerApiKey, BearerAndConstantTimeCompare) {
  EXPECT_TRUE(bearer_token_matches("Bearer sk-1", "sk-1"));
  EXPECT_TRUE(bearer_token_matches("bearer  sk-1 ", "sk-1"));
  EXPECT_FALSE(bearer_token_matches("Bearer sk-2", "sk-1"));
  EXPECT_FALSE(bearer_token_matches("Bearer sk-1x", "sk-1"));
  EXPECT_FALSE(bearer_token_matches("Bearer sk-", "sk-1"));
  EXPECT_FALSE(bearer_token_matches("Basic sk-1", "sk-1"));
  EXPECT_FALSE(bearer_token_matches("", "sk-1"));
  EXPECT_FALSE(bearer_token_matches("Bearer ", ""));
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("", "abc"));
  EXPECT_FALSE(constant_time_equal("abcabc", "abc"));
}

}  // namespace
}  // namespace fg::server
