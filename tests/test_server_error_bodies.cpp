// tests/test_server_error_bodies.cpp — what an error body may say: at most ~1 KiB of message and a
// short param whatever the request held (a 4 MB bad value gets an excerpt, never itself back), and
// JSON syntax errors that give the byte offset in our words, never the parser's internals.
#include <gtest/gtest.h>

#include <string>

#include "server/tokenize_endpoints.h"
#include "server_test_support.h"

namespace fg::server {
namespace {

using nlohmann::json;
using testing::ModelFixture;

class ErrorBodies : public ModelFixture {
 protected:
  // The error `body` ends with, on `endpoint`; fails the test when it is accepted.
  ApiError error_of(Endpoint endpoint, const json& body) {
    try {
      parse_openai_request(endpoint, body, model_);
    } catch (const ApiError& e) {
      return e;
    }
    ADD_FAILURE() << "accepted";
    return ApiError(0, "");
  }
};

TEST_F(ErrorBodies, AHugeBadValueGetsAShortMessage) {
  const std::string huge(4 << 20, 'z');
  const json messages = user("hi");
  const std::vector<std::pair<Endpoint, json>> cases = {
      {Endpoint::kCompletions, {{"prompt", "hi"}, {"max_tokens", huge}}},
      {Endpoint::kCompletions, {{"prompt", "hi"}, {"model", huge}}},
      {Endpoint::kCompletions, {{"prompt", "hi"}, {huge, 1}}},
      {Endpoint::kCompletions, {{"prompt", {1, huge}}}},
      {Endpoint::kCompletions, {{"prompt", "hi"}, {"stop", {{{"x", huge}}}}}},
      {Endpoint::kCompletions, {{"prompt", "hi"}, {"logit_bias", {{huge, 1}}}}},
      {Endpoint::kCompletions, {{"prompt", "hi"}, {"seed", huge}}},
      {Endpoint::kCompletions, {{"prompt", "hi"}, {"stream", true}, {"stream_options", {{huge, true}}}}},
      {Endpoint::kChatCompletions, {{"messages", {{{"role", huge}, {"content", "x"}}}}}},
      {Endpoint::kChatCompletions, {{"messages", {{{"role", "user"}, {"content", "x"}, {huge, 1}}}}}},
      {Endpoint::kChatCompletions,
       {{"messages", {{{"role", "user"}, {"content", {{{"type", huge}, {"text", "x"}}}}}}}}},
      {Endpoint::kChatCompletions, {{"messages", messages}, {"response_format", {{"type", huge}}}}},
      {Endpoint::kChatCompletions, {{"messages", messages}, {"chat_template_kwargs", {{huge, 1}}}}},
      {Endpoint::kChatCompletions, {{"messages", messages}, {"modalities", {huge}}}},
  };
  for (const auto& [endpoint, body] : cases) {
    const ApiError e = error_of(endpoint, body);
    const std::string message = e.what();
    EXPECT_LE(message.size(), kMaxErrorMessageBytes) << message.substr(0, 200);
    EXPECT_LE(e.param().size(), kMaxErrorParamBytes) << e.param().substr(0, 200);
    EXPECT_NE(message.find("zzzz"), std::string::npos) << "no excerpt: " << message.substr(0, 200);
    EXPECT_LE(e.body().dump().size(), 2 * kMaxErrorMessageBytes);
  }
}

TEST_F(ErrorBodies, TheBoundHoldsWhereAThrowerForgot) {
  const ApiError e(400, std::string(1 << 20, 'm'), std::string(1 << 20, 'p'));
  EXPECT_LE(std::string(e.what()).size(), kMaxErrorMessageBytes);
  EXPECT_NE(std::string(e.what()).find("1048576 bytes"), std::string::npos);  // says how long it was
  EXPECT_LE(e.param().size(), kMaxErrorParamBytes);
  const ApiError utf8(400, std::string(2000, 'a') + "\xc3\xa9");  // never cut inside a character
  EXPECT_NO_THROW((void)utf8.body().dump());
}

TEST(ServerJsonErrors, SyntaxErrorsNameTheOffsetInOurWords) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"prompt\": tru}", "offset 14"},  // where the lexer gave up: the }
      {"{\"prompt\": \"hi\",}", "offset 16"},
      {"not json", "offset 1"},
      {"{\"a\": 1} trailing", "offset 11"},
      {"{\"a\": \"\xff\"}", "offset 7"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key 'a'"},
      {"{\"a\": " + std::string(100, '[') + std::string(100, ']') + "}", "deeper than 64"},
  };
  for (const auto& [body, want] : cases) {
    try {
      parse_json_body(body);
      ADD_FAILURE() << body;
    } catch (const ApiError& e) {
      const std::string m = e.what();
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "");
      EXPECT_NE(m.find(want), std::string::npos) << m;
      EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;
      EXPECT_NE(m.find("request body"), std::string::npos) << m;
    }
  }
}

TEST(ServerJsonErrors, AHugeMalformedBodyGetsAShortMessage) {
  for (const std::string& body : {"{\"prompt\": \"" + std::string(4 << 20, 'q'),  // unterminated string
                                  "{\"prompt\": " + std::string(4 << 20, '7') + "x}",
                                  std::string(4 << 20, '{')}) {
    try {
      parse_json_body(body);
      ADD_FAILURE();
    } catch (const ApiError& e) {
      EXPECT_LE(std::string(e.what()).size(), 600u) << std::string(e.what()).substr(0, 200);
    }
  }
}

}  // namespace
}  // namespace fg::server
