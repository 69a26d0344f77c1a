// tests/server_test_support.h — a served model for the server's protocol tests without a model:
// the built-in tokenizer and chat template, a 512-token vocabulary, a 256-token context and a KV
// cache that is not the limit; and a helper that expects an ApiError with its status and param.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/openai_request.h"
#include "tokenizer/builtin_tokenizer.h"

namespace fg::server::testing {

class ModelFixture : public ::testing::Test {
 protected:
  ModelFixture()
      : tokenizer_(Tokenizer::from_json(builtin_tokenizer_json(), "built-in")),
        chat_(ChatTemplateConfig{builtin_chat_template(), "<|begin_of_text|>", "<|end_of_text|>"}) {
    model_.served_names = {"tiny", "alias"};
    model_.tokenizer = &tokenizer_;
    model_.chat_template = &chat_;
    model_.vocab_size = 512;
    model_.max_model_len = 256;
    model_.block_size = 16;
    model_.usable_blocks = 64;  // 1024 tokens: the context, not the cache, is the limit
  }

  ParsedRequest completion(const nlohmann::json& body) {
    return parse_openai_request(Endpoint::kCompletions, body, model_);
  }
  ParsedRequest chat(const nlohmann::json& body) {
    return parse_openai_request(Endpoint::kChatCompletions, body, model_);
  }
  static nlohmann::json user(const std::string& text) { return {{{"role", "user"}, {"content", text}}}; }

  Tokenizer tokenizer_;
  ChatTemplate chat_;
  ModelContext model_;
};

// Runs `f`, which must throw an ApiError with `status` and `param`; returns it for more checks.
template <typename F>
ApiError expect_api_error(F&& f, int status, const std::string& param, const std::string& what) {
  try {
    f();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), status) << what << ": " << e.what();
    EXPECT_EQ(e.param(), param) << what << ": " << e.what();
    return e;
  }
  ADD_FAILURE() << "accepted: " << what;
  return ApiError(0, "");
}

}  // namespace fg::server::testing
