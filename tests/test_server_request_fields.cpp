// tests/test_server_request_fields.cpp — the request fields a vLLM client sends beyond the basic
// ones: the harmless ones accepted and ignored (logged once), every other unknown one still a 400;
// logit_bias, echo, suffix, prompt_logprobs, priority, request_id, truncate_prompt_tokens,
// add_special_tokens; chat's add_generation_prompt and continue_final_message; and
// stream_options.continuous_usage_stats as the stream formatter sends it.
#include <gtest/gtest.h>

#include "server/completion_request.h"
#include "server/ignored_fields.h"
#include "server/sse_stream.h"
#include "server_test_support.h"

namespace fg::server {
namespace {

using nlohmann::json;
using testing::expect_api_error;
using testing::ModelFixture;

class RequestFields : public ModelFixture {};

TEST_F(RequestFields, HarmlessFieldsAreAcceptedAndIgnored) {
  const json harmless = {{"store", false},
                         {"metadata", {{"k", "v"}}},
                         {"service_tier", "auto"},
                         {"user", "u-1"},
                         {"safety_identifier", "s"},
                         {"prompt_cache_key", "c"}};
  json body = harmless;
  body["prompt"] = "hi";
  const ParsedRequest plain = completion({{"prompt", "hi"}});
  const ParsedRequest with = completion(body);
  EXPECT_EQ(with.prompt, plain.prompt);
  body = harmless;
  body["messages"] = user("hi");
  body["reasoning_effort"] = "low";
  body["modalities"] = {"text"};
  EXPECT_EQ(chat(body).prompt, chat({{"messages", user("hi")}}).prompt);
  // Logged once per process: the parse above logged these names already.
  EXPECT_FALSE(note_ignored_field("store"));
  EXPECT_FALSE(note_ignored_field("frobnicate"));  // not in the set: never logged
}

TEST_F(RequestFields, IgnoredFieldsAreStillTypeChecked) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"store", "yes"}}, "store"},           {{{"metadata", 3}}, "metadata"},
      {{{"service_tier", 1}}, "service_tier"}, {{{"modalities", {"text", "audio"}}}, "modalities"},
      {{{"user", 5}}, "user"},                 {{{"frobnicate", 1}}, "frobnicate"},
      {{{"chat_template", "{{x}}"}}, "chat_template"}};
  for (const auto& [fields, param] : cases) {
    json body = fields;
    body["messages"] = user("hi");
    expect_api_error([&] { chat(body); }, 400, param, body.dump());
  }
}

TEST_F(RequestFields, LogitBiasReachesTheSpec) {
  const ParsedRequest r = completion({{"prompt", "hi"}, {"logit_bias", {{"5", 2.5}, {"511", -100}}}});
  EXPECT_EQ(r.spec.logit_bias, (std::vector<std::pair<int32_t, float>>{{5, 2.5f}, {511, -100.0f}}));
  EXPECT_EQ(chat({{"messages", user("hi")}, {"logit_bias", {{"7", 1}}}}).spec.logit_bias.size(), 1u);
  for (const json& bias : {json{{"512", 1}}, json{{"5", 101}}, json{{"five", 1}}, json{{"5", 1}, {"005", 1}}})
    expect_api_error([&] { completion({{"prompt", "hi"}, {"logit_bias", bias}}); }, 400, "logit_bias", bias.dump());
}

TEST_F(RequestFields, EchoPrependsThePromptToEachChoice) {
  const ParsedRequest r = completion({{"prompt", "hello world"}, {"echo", true}, {"n", 2}});
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.echo_text, "hello world");
  EXPECT_EQ(r.spec.prompt_logprobs, -1);  // no logprobs asked: none for the prompt either
  std::vector<ChoiceOutput> choices(2);
  choices[0].text = " a";
  choices[1].text = " b";
  prepend_echo(choices, r);
  EXPECT_EQ(choices[0].text, "hello world a");
  EXPECT_EQ(choices[1].text, "hello world b");
  // Token ids are echoed as the model reads them.
  const std::vector<int32_t> ids = tokenizer_.encode("hello", true);
  EXPECT_EQ(completion({{"prompt", ids}, {"echo", true}}).echo_text, tokenizer_.decode(ids, false));
  // With logprobs, vLLM returns the prompt's logprobs too, at the same count, unless told otherwise.
  EXPECT_EQ(completion({{"prompt", "hi"}, {"echo", true}, {"logprobs", 3}}).spec.prompt_logprobs, 3);
  const json explicit_count = {{"prompt", "hi"}, {"echo", true}, {"logprobs", 3}, {"prompt_logprobs", 1}};
  EXPECT_EQ(completion(explicit_count).spec.prompt_logprobs, 1);
  const ParsedRequest off = completion({{"prompt", "hi"}, {"echo", false}});
  EXPECT_FALSE(off.echo);
  EXPECT_TRUE(off.echo_text.empty());
  expect_api_error([&] { chat({{"messages", user("hi")}, {"echo", true}}); }, 400, "echo", "chat echo");
  model_.tokenizer = nullptr;
  expect_api_error([&] { completion({{"prompt", {1, 2}}, {"echo", true}}); }, 400, "echo", "echo without tokenizer");
}

TEST_F(RequestFields, SuffixSaysThereIsNoFillInTheMiddleTemplate) {
  const ApiError e =
      expect_api_error([&] { completion({{"prompt", "hi"}, {"suffix", "x"}}); }, 400, "suffix", "suffix");
  EXPECT_NE(std::string(e.what()).find("fill-in-the-middle"), std::string::npos) << e.what();
  EXPECT_NO_THROW(completion({{"prompt", "hi"}, {"suffix", ""}}));
}

TEST_F(RequestFields, PromptLogprobsPriorityAndRequestId) {
  EXPECT_EQ(completion({{"prompt", "hi"}, {"priority", 0}}).spec.priority, 0);
  // As vLLM: a priority means nothing to a first-come-first-served scheduler, so it is refused.
  expect_api_error([&] { completion({{"prompt", "hi"}, {"priority", 1}}); }, 400, "priority", "fcfs");
  model_.priority_scheduling = true;
  const ParsedRequest r =
      chat({{"messages", user("hi")}, {"prompt_logprobs", 2}, {"priority", -3}, {"request_id", "req-42"}});
  EXPECT_EQ(r.spec.prompt_logprobs, 2);
  EXPECT_EQ(r.spec.priority, -3);
  EXPECT_EQ(r.request_id, "req-42");
  expect_api_error([&] { completion({{"prompt", "hi"}, {"prompt_logprobs", 21}}); }, 400, "prompt_logprobs", "21");
  expect_api_error([&] { completion({{"prompt", "hi"}, {"priority", "high"}}); }, 400, "priority", "string");
  for (const json& id : {json(""), json(5), json(std::string(300, 'a')), json("a\nb")})
    expect_api_error([&] { completion({{"prompt", "hi"}, {"request_id", id}}); }, 400, "request_id", id.dump());
}

TEST_F(RequestFields, ResponseIdsFollowVllm) {
  ParsedRequest r = chat({{"messages", user("hi")}, {"request_id", "abc"}});
  EXPECT_EQ(response_id(r), "chatcmpl-abc");
  EXPECT_EQ(response_id(r, "from-header"), "chatcmpl-from-header");  // the header wins, as in vLLM
  r.request_id.clear();
  EXPECT_EQ(response_id(r).rfind("chatcmpl-", 0), 0u);
  EXPECT_GT(response_id(r).size(), 20u);
  r.endpoint = Endpoint::kCompletions;
  EXPECT_EQ(response_id(r, "x"), "cmpl-x");
  expect_api_error([&] { response_id(r, "bad\r\nheader"); }, 400, "", "header");
}

TEST_F(RequestFields, TruncatePromptTokensKeepsTheLastTokens) {
  const std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(completion({{"prompt", ids}, {"truncate_prompt_tokens", 4}}).prompt, (std::vector<int32_t>{3, 4, 5, 6}));
  EXPECT_EQ(completion({{"prompt", ids}, {"truncate_prompt_tokens", 10}}).prompt, ids);
  EXPECT_EQ(completion({{"prompt", ids}, {"truncate_prompt_tokens", -1}}).prompt, ids);
  const ParsedRequest c = chat({{"messages", user("a long enough message")}, {"truncate_prompt_tokens", 3}});
  EXPECT_EQ(c.prompt.size(), 3u);
  const ParsedRequest echoed =
      completion({{"prompt", "hello there world"}, {"truncate_prompt_tokens", 2}, {"echo", true}});
  EXPECT_EQ(echoed.echo_text, tokenizer_.decode(echoed.prompt, false));  // what the model read
  for (const json& n : {json(0), json(-2), json(257), json("3")})
    expect_api_error([&] { completion({{"prompt", ids}, {"truncate_prompt_tokens", n}}); }, 400,
                     "truncate_prompt_tokens", n.dump());
  // A long prompt cut to fit is served; uncut it is refused.
  const std::vector<int32_t> long_prompt(300, 7);
  expect_api_error([&] { completion({{"prompt", long_prompt}}); }, 400, "prompt", "long prompt");
  EXPECT_EQ(completion({{"prompt", long_prompt}, {"truncate_prompt_tokens", 200}}).prompt.size(), 200u);
}

TEST_F(RequestFields, AddSpecialTokens) {
  EXPECT_EQ(completion({{"prompt", "hi"}}).prompt, tokenizer_.encode("hi", true));
  EXPECT_EQ(completion({{"prompt", "hi"}, {"add_special_tokens", false}}).prompt, tokenizer_.encode("hi", false));
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  const std::string text = chat_.render(normalize_chat_messages(user("hi")), options);
  EXPECT_EQ(chat({{"messages", user("hi")}}).prompt, tokenizer_.encode(text, false));
  EXPECT_EQ(chat({{"messages", user("hi")}, {"add_special_tokens", true}}).prompt, tokenizer_.encode(text, true));
  expect_api_error([&] { completion({{"prompt", "hi"}, {"add_special_tokens", 1}}); }, 400, "add_special_tokens", "1");
}

TEST_F(RequestFields, ChatGenerationPromptAndContinuingTheFinalMessage) {
  json messages = user("hi");
  messages.push_back({{"role", "assistant"}, {"content", "Once upon"}});
  const nlohmann::ordered_json normalized = normalize_chat_messages(messages);
  ChatRenderOptions options;
  const std::string closed = chat_.render(normalized, options);  // no generation prompt
  EXPECT_EQ(chat({{"messages", messages}, {"add_generation_prompt", false}}).prompt, tokenizer_.encode(closed, false));
  // Continued: the text ends with the assistant's words, not with the end of its turn.
  const std::string open = closed.substr(0, closed.rfind("Once upon") + 9);
  ASSERT_LT(open.size(), closed.size());
  EXPECT_EQ(chat({{"messages", messages}, {"continue_final_message", true}}).prompt, tokenizer_.encode(open, false));
  EXPECT_EQ(chat({{"messages", messages}, {"continue_final_message", true}, {"add_generation_prompt", false}}).prompt,
            tokenizer_.encode(open, false));
  expect_api_error(
      [&] { chat({{"messages", messages}, {"continue_final_message", true}, {"add_generation_prompt", true}}); }, 400,
      "continue_final_message", "both");
  // transformers' cut: trailing space the template kept stays; a template that drops the message fails.
  EXPECT_EQ(cut_after_final_message("<a>hi there </a>", "hi there "), "<a>hi there ");
  EXPECT_EQ(cut_after_final_message("<a>hi there</a>", "hi there "), "<a>hi there");
  expect_api_error([&] { cut_after_final_message("<a></a>", "gone"); }, 400, "continue_final_message", "gone");
}

TEST_F(RequestFields, StreamOptionsContinuousUsageStats) {
  const json stream_options = {{"include_usage", true}, {"continuous_usage_stats", true}};
  const ParsedRequest r = chat({{"messages", user("hi")}, {"stream", true}, {"stream_options", stream_options}});
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.continuous_usage);
  // vLLM: per-chunk usage only where usage is asked for at all.
  EXPECT_FALSE(chat({{"messages", user("hi")},
                     {"stream", true},
                     {"stream_options", {{"continuous_usage_stats", true}}}})
                   .continuous_usage);
  const int64_t prompt_tokens = static_cast<int64_t>(r.prompt.size());
  StreamFormatter format(ResponseHeader{"chatcmpl-1", 1, "tiny"}, r, LogprobFormatter(&tokenizer_));
  const std::string begin = format.begin();
  EXPECT_NE(begin.find(fmt::format(R"("usage":{{"prompt_tokens":{},"completion_tokens":0)", prompt_tokens)),
            std::string::npos)
      << begin;
  RequestOutput out;
  out.token_ids = {65};
  out.text = "A";
  out.num_generated_tokens = 3;
  const std::string event = format.delta(0, out);
  EXPECT_NE(event.find(fmt::format(R"("usage":{{"prompt_tokens":{},"completion_tokens":3,"total_tokens":{}}})",
                                   prompt_tokens, prompt_tokens + 3)),
            std::string::npos)
      << event;
  // Without it, chunks carry "usage": null and only the last chunk has the counts.
  ParsedRequest plain = r;
  plain.continuous_usage = false;
  StreamFormatter quiet(ResponseHeader{"chatcmpl-2", 1, "tiny"}, plain, LogprobFormatter(&tokenizer_));
  EXPECT_NE(quiet.delta(0, out).find(R"("usage":null)"), std::string::npos);
}

TEST_F(RequestFields, StreamedEchoOpensEachChoiceOnce) {
  const ParsedRequest r = completion({{"prompt", "hello"}, {"echo", true}, {"n", 2}, {"stream", true}});
  StreamFormatter format(ResponseHeader{"cmpl-1", 1, "tiny"}, r, LogprobFormatter(&tokenizer_));
  RequestOutput out;
  out.token_ids = {65};
  out.text = " A";
  EXPECT_NE(format.delta(0, out).find(R"("text":"hello A")"), std::string::npos);
  EXPECT_NE(format.delta(0, out).find(R"("text":" A")"), std::string::npos);
  EXPECT_NE(format.delta(1, out).find(R"("text":"hello A")"), std::string::npos);
}

}  // namespace
}  // namespace fg::server
