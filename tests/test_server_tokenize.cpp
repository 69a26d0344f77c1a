// tests/test_server_tokenize.cpp — the endpoints beside generation, as functions: vLLM's
// /tokenize (prompt or messages, token_strs on request) and /detokenize, and GET /v1/models/{id}
// with the same model object as the list.
#include <gtest/gtest.h>

#include "server/model_endpoints.h"
#include "server/tokenize_endpoints.h"
#include "server_test_support.h"

namespace fg::server {
namespace {

using nlohmann::json;
using testing::expect_api_error;
using testing::ModelFixture;

class Endpoints : public ModelFixture {};

TEST_F(Endpoints, TokenizeAPrompt) {
  const std::vector<int32_t> ids = tokenizer_.encode("hello world", true);
  const nlohmann::ordered_json r = tokenize_response({{"prompt", "hello world"}, {"model", "alias"}}, model_);
  EXPECT_EQ(r["count"], ids.size());
  EXPECT_EQ(r["max_model_len"], 256);
  EXPECT_EQ(r["tokens"].get<std::vector<int32_t>>(), ids);
  EXPECT_TRUE(r.contains("token_strs") && r["token_strs"].is_null());  // vLLM's shape: the key, null
  const auto plain = tokenize_response({{"prompt", "hello world"}, {"add_special_tokens", false}}, model_);
  EXPECT_EQ(plain["tokens"].get<std::vector<int32_t>>(), tokenizer_.encode("hello world", false));
  const auto strs = tokenize_response({{"prompt", "hello world"}, {"return_token_strs", true}}, model_);
  ASSERT_EQ(strs["token_strs"].size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(strs["token_strs"][i], *tokenizer_.id_to_token(ids[i]));
  EXPECT_EQ(tokenize_response({{"prompt", ""}, {"add_special_tokens", false}}, model_)["count"], 0);
}

TEST_F(Endpoints, TokenizeMessagesAsChatRendersThem) {
  const json messages = user("hi");
  EXPECT_EQ(tokenize_response({{"messages", messages}}, model_)["tokens"].get<std::vector<int32_t>>(),
            chat({{"messages", messages}}).prompt);
  const auto closed = tokenize_response({{"messages", messages}, {"add_generation_prompt", false}}, model_);
  EXPECT_EQ(closed["tokens"].get<std::vector<int32_t>>(),
            chat({{"messages", messages}, {"add_generation_prompt", false}}).prompt);
  EXPECT_LT(closed["count"].get<size_t>(), tokenize_response({{"messages", messages}}, model_)["count"].get<size_t>());
}

TEST_F(Endpoints, TokenizeRefusals) {
  expect_api_error([&] { tokenize_response(json::object(), model_); }, 400, "prompt", "nothing");
  expect_api_error([&] { tokenize_response({{"prompt", "a"}, {"messages", user("b")}}, model_); }, 400, "messages",
                   "both");
  expect_api_error([&] { tokenize_response({{"prompt", 5}}, model_); }, 400, "prompt", "number");
  expect_api_error([&] { tokenize_response({{"prompt", "a"}, {"add_generation_prompt", true}}, model_); }, 400,
                   "add_generation_prompt", "chat field on a prompt");
  expect_api_error([&] { tokenize_response({{"prompt", "a"}, {"model", "other"}}, model_); }, 404, "model", "model");
  expect_api_error([&] { tokenize_response({{"messages", user("b")}, {"tools", {{{"type", "function"}}}}}, model_); },
                   400, "tools", "tools");
  expect_api_error(
      [&] {
        tokenize_response({{"messages", user("b")}, {"continue_final_message", true}, {"add_generation_prompt", true}},
                          model_);
      },
      400, "continue_final_message", "both");
  model_.tokenizer = nullptr;
  expect_api_error([&] { tokenize_response({{"prompt", "a"}}, model_); }, 400, "prompt", "no tokenizer");
}

TEST_F(Endpoints, Detokenize) {
  const std::vector<int32_t> ids = tokenizer_.encode("hello world", true);
  EXPECT_EQ(detokenize_response({{"tokens", ids}}, model_)["prompt"], tokenizer_.decode(ids, false));
  EXPECT_EQ(detokenize_response({{"tokens", json::array()}, {"model", "tiny"}}, model_)["prompt"], "");
  expect_api_error([&] { detokenize_response({{"tokens", {1, 512}}}, model_); }, 400, "tokens", "512");
  expect_api_error([&] { detokenize_response({{"tokens", {-1}}}, model_); }, 400, "tokens", "-1");
  expect_api_error([&] { detokenize_response({{"tokens", "1 2"}}, model_); }, 400, "tokens", "string");
  expect_api_error([&] { detokenize_response(json::object(), model_); }, 400, "tokens", "none");
  expect_api_error([&] { detokenize_response({{"tokens", {1}}, {"prompt", "x"}}, model_); }, 400, "prompt", "extra");
}

TEST_F(Endpoints, RetrieveAModel) {
  model_.served_names = {"meta-llama/Llama-3.1-8B", "alias"};
  const nlohmann::ordered_json list = model_list(model_, 123);
  ASSERT_EQ(list["data"].size(), 2u);
  EXPECT_EQ(retrieve_model(model_, "alias", 123), list["data"][1]);
  EXPECT_EQ(retrieve_model(model_, "meta-llama/Llama-3.1-8B", 123), list["data"][0]);
  EXPECT_EQ(retrieve_model(model_, "meta-llama%2FLlama-3.1-8B", 123), list["data"][0]);
  const auto& card = list["data"][0];
  EXPECT_EQ(card["object"], "model");
  EXPECT_EQ(card["created"], 123);
  EXPECT_EQ(card["max_model_len"], 256);
  EXPECT_EQ(card["vocab_size"], 512);
  const ApiError e = expect_api_error([&] { retrieve_model(model_, "gpt-4", 1); }, 404, "model", "unknown");
  EXPECT_EQ(e.code(), "model_not_found");
  expect_api_error([&] { retrieve_model(model_, "%ff%fe", 1); }, 404, "model", "not UTF-8");
  EXPECT_EQ(percent_decode("a%2fb%zz%4"), "a/b%zz%4");
}

}  // namespace
}  // namespace fg::server
