// tests/test_strict_json.cpp — core/json: the strict parser every model-folder file goes through
// and the path-aware view. Each refusal must name the source, say where (path or byte offset),
// and never show nlohmann's internal "[json.exception...]" tag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"
#include "core/json/strict_json.h"

namespace fg {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string parse_error(std::string_view text, const JsonSource& source = {"doc.json", ""},
                        const JsonLimits& limits = {}) {
  try {
    parse_strict_json(text, source, limits);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a refusal of: " << text;
  return "";
}

std::string view_error(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a refusal";
  return "";
}

TEST(StrictJson, KeepsTopLevelKeysInDocumentOrder) {
  const JsonDocument doc = parse_strict_json(R"({"z": 1, "a": {"y": 2, "b": 3}, "m": []})", {"doc.json", ""});
  EXPECT_EQ(doc.top_level_keys, (std::vector<std::string>{"z", "a", "m"}));
  EXPECT_EQ(doc.value["a"]["b"], 3);
  EXPECT_EQ(doc.source, "doc.json");
}

TEST(StrictJson, SyntaxErrorsSayOffsetLineAndColumn) {
  const std::string m = parse_error("{\n  \"a\": 1,\n  \"b\": }\n");
  EXPECT_THAT(m, AllOf(StartsWith("doc.json: not valid JSON: malformed JSON at offset 19 (line 3, column 8): "),
                       HasSubstr("unexpected '}'"), Not(HasSubstr("json.exception")), Not(HasSubstr("parse error"))));
  EXPECT_THAT(parse_error("{} x"), AllOf(HasSubstr("offset 3"), HasSubstr("expected end of input")));
  EXPECT_THAT(parse_error(""), HasSubstr("offset 0"));
  EXPECT_THAT(parse_error("{\"a\": 1", {"f.safetensors", "header"}),
              StartsWith("f.safetensors: header is not valid JSON: malformed JSON at offset 7 (line 1, column 8)"));
}

TEST(StrictJson, DuplicateKeysNameTheKeyThePathAndTheOffset) {
  EXPECT_EQ(parse_error(R"({"a": 1, "a": 2})"),
            "doc.json: duplicate key 'a' at the top level (offset 9): the object has \"a\" twice");
  EXPECT_EQ(parse_error(R"({"x": [0, {"k": 1, "k\"": 2, "\u006b": 3}]})"),
            "doc.json: duplicate key 'k' inside 'x[1]' (offset 29): the object has \"k\" twice");
  // Only repeats within one object count.
  EXPECT_NO_THROW(parse_strict_json(R"({"a": {"a": {"a": 1}}, "b": {"a": 2}})", {"doc.json", ""}));
}

TEST(StrictJson, DepthIsLimitedAsContainersOpen) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(parse_error(deep), "doc.json: JSON nested deeper than 64 levels (offset 64)");
  EXPECT_NO_THROW(parse_strict_json(std::string(64, '[') + std::string(64, ']'), {"doc.json", ""}));
  EXPECT_THAT(parse_error("[[[]]]", {"doc.json", ""}, {.max_depth = 2}), HasSubstr("deeper than 2 levels"));
}

TEST(StrictJson, SizeAndUtf8) {
  EXPECT_EQ(parse_error("[1, 2]", {"doc.json", ""}, {.max_bytes = 5}),
            "doc.json: 6 bytes of JSON, over the limit of 5 bytes");
  EXPECT_EQ(parse_error("{\"a\": \"\xc0\xaf\"}"),
            "doc.json: not valid JSON: not valid UTF-8 at offset 7 (byte 0xc0 starts no valid sequence)");
}

TEST(StrictJson, ClipsLongTextWithoutCuttingACharacter) {
  EXPECT_EQ(clip_for_message("short"), "short");
  EXPECT_EQ(clip_for_message("ab\xc3\xa9z", 3), "ab... (5 bytes)");
}

TEST(StrictJson, ReadsFilesAndNamesThem) {
  const std::string dir = ::testing::TempDir() + "fg_strict_json_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/c.json";
  std::ofstream(path) << R"({"a": [1, 2]})";
  EXPECT_EQ(read_json_file(path).value["a"][1], 2);
  EXPECT_THAT(view_error([&] { read_json_file(path, {.max_bytes = 4}); }),
              AllOf(StartsWith(path + ": "), HasSubstr("over the limit of 4 bytes")));
  EXPECT_THAT(view_error([&] { read_json_file(dir + "/absent.json"); }), StartsWith(dir + "/absent.json: cannot open"));
  EXPECT_THAT(view_error([&] { read_json_file(dir); }), HasSubstr("not a regular file"));
  std::filesystem::remove_all(dir);
}

TEST(JsonView, TypedAccessorsNameTheFieldAndTheValue) {
  const JsonDocument doc = parse_strict_json(
      R"({"n": 64, "f": 64.0, "s": "64", "b": true, "neg": -1, "big": 18446744073709551615,
          "nul": null, "list": [1, "x"], "obj": {"inner": {}}})",
      {"c.json", ""});
  const JsonView root = doc.root();
  EXPECT_EQ(root["n"].as_int(1, 100), 64);
  EXPECT_EQ(view_error([&] { root["n"].as_int(1, 10); }),
            "c.json: n must be a positive integer of at most 10, found 64");
  EXPECT_EQ(view_error([&] { root["f"].as_int(); }), "c.json: f must be an integer, found 64.0");
  EXPECT_EQ(view_error([&] { root["s"].as_int(0); }), "c.json: s must be a non-negative integer, found string \"64\"");
  EXPECT_EQ(view_error([&] { root["big"].as_int(); }), "c.json: big must be an integer, found 18446744073709551615");
  EXPECT_EQ(view_error([&] { root["neg"].as_positive_number(); }), "c.json: neg must be positive, found -1");
  EXPECT_EQ(view_error([&] { root["s"].as_number(); }), "c.json: s must be a number, found string \"64\"");
  EXPECT_EQ(view_error([&] { root["n"].as_bool(); }), "c.json: n must be true or false, found 64");
  EXPECT_EQ(view_error([&] { root["list"].item(1).as_int(); }),
            "c.json: list[1] must be an integer, found string \"x\"");
  EXPECT_EQ(view_error([&] { root["obj"]["inner"]["deep"]; }), "c.json: obj.inner: the field \"deep\" is missing");
  EXPECT_EQ(view_error([&] { root["b"].require_object(); }), "c.json: b must be a JSON object, found boolean true");
  EXPECT_EQ(view_error([&] { root.required_non_null("nul"); }), "c.json: nul is required but missing (or null)");
  EXPECT_FALSE(root.get_non_null("nul").has_value());
  EXPECT_TRUE(root.get("nul").has_value());
  EXPECT_FALSE(root.get("absent").has_value());
  EXPECT_EQ(view_error([&] { root.allow_only({"n"}); }), "c.json: b: the option \"b\" is not supported by fullgraph");
}

TEST(JsonView, TheRootMustBeAnObject) {
  const JsonDocument doc = parse_strict_json("[1, 2]", {"c.json", ""});
  EXPECT_EQ(view_error([&] { doc.root().require_object(); }),
            "c.json: expected an object at the top level, found array [1,2] (the top level must be a JSON object)");
}

}  // namespace
}  // namespace fg
