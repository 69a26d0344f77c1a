// tests/test_tool_schema.cpp — server/tool_schema: tools and tool_choice read from a request, every
// refusal a 400 naming the field, and vLLM's schemas for tool_choice "required" and a named
// function, which the matching parser formats read back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"
#include "server/tool_call_parser.h"
#include "server/tool_schema.h"

namespace fg::server {
namespace {

using nlohmann::json;

json weather_tool() {
  return json::parse(R"({"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
    "required": ["city"]}}})");
}

json time_tool() { return json::parse(R"({"type": "function", "function": {"name": "get_time"}})"); }

// The param of the 400 `read` throws; fails the test when it throws nothing.
template <typename Read>
std::string refused_param(Read read) {
  try {
    read();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_FALSE(std::string(e.what()).empty());
    return e.param();
  }
  ADD_FAILURE() << "expected a 400";
  return "";
}

std::string tools_param(const json& tools) {
  return refused_param([&] { read_tools(tools); });
}

TEST(ToolSchema, ReadsTools) {
  const auto tools = read_tools(json::array({weather_tool(), time_tool()}));
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].name, "get_weather");
  EXPECT_EQ(tools[0].description, "Weather in a city");
  EXPECT_EQ(tools[0].parameters["required"], json::array({"city"}));
  EXPECT_EQ(tools[1].name, "get_time");
  EXPECT_TRUE(tools[1].parameters.is_null());
  EXPECT_TRUE(read_tools(json()).empty());
  EXPECT_TRUE(read_tools(json::array()).empty());
  // type may be left out, as vLLM allows.
  EXPECT_EQ(read_tools(json::parse(R"([{"function": {"name": "f", "strict": true}}])"))[0].strict, true);
}

TEST(ToolSchema, RefusesBadTools) {
  EXPECT_EQ(tools_param(json::object()), "tools");
  EXPECT_EQ(tools_param(json::array({weather_tool(), 3})), "tools[1]");
  EXPECT_EQ(tools_param(json::parse(R"([{"type": "retrieval", "function": {"name": "f"}}])")), "tools[0].type");
  EXPECT_EQ(tools_param(json::parse(R"([{"type": "function"}])")), "tools[0].function");
  EXPECT_EQ(tools_param(json::parse(R"([{"type": "function", "function": "f"}])")), "tools[0].function");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"description": "no name"}}])")), "tools[0].function.name");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": ""}}])")), "tools[0].function.name");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": 7}}])")), "tools[0].function.name");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "description": 1}}])")),
            "tools[0].function.description");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "strict": "yes"}}])")), "tools[0].function.strict");
  const json bad_parameters = json::parse(R"([{"function": {"name": "a"}}, {"function": {"name": "b"}},
    {"function": {"name": "c", "parameters": "city: string"}}])");
  EXPECT_EQ(tools_param(bad_parameters), "tools[2].function.parameters");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "parameters": [1]}}])")),
            "tools[0].function.parameters");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "parameters": {"type": "string"}}}])")),
            "tools[0].function.parameters.type");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "parameters": {"properties": []}}}])")),
            "tools[0].function.parameters.properties");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "parameters": {"properties": {"x": 5}}}}])")),
            "tools[0].function.parameters.properties.x");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "parameters": {"required": "x"}}}])")),
            "tools[0].function.parameters.required");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "parameters": {"required": ["x", 1]}}}])")),
            "tools[0].function.parameters.required");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "parameters": {"$defs": 1}}}])")),
            "tools[0].function.parameters.$defs");
  EXPECT_EQ(tools_param(json::parse(R"([{"function": {"name": "f", "parameters": {"$defs": {"D": 1}}}}])")),
            "tools[0].function.parameters.$defs.D");
  EXPECT_EQ(tools_param(json::array({weather_tool(), time_tool(), weather_tool()})), "tools[2].function.name");
}

TEST(ToolSchema, ReadsToolChoice) {
  const auto tools = read_tools(json::array({weather_tool(), time_tool()}));
  EXPECT_EQ(read_tool_choice(json(), tools, true).mode, ToolChoiceMode::kAuto);  // absent, with tools
  EXPECT_EQ(read_tool_choice(json(), {}, false).mode, ToolChoiceMode::kNone);    // absent, no tools
  EXPECT_EQ(read_tool_choice("none", tools, false).mode, ToolChoiceMode::kNone);
  EXPECT_EQ(read_tool_choice("auto", tools, true).mode, ToolChoiceMode::kAuto);
  EXPECT_EQ(read_tool_choice("required", tools, false).mode, ToolChoiceMode::kRequired);
  const ToolChoice named =
      read_tool_choice(json::parse(R"({"type": "function", "function": {"name": "get_time"}})"), tools, false);
  EXPECT_EQ(named.mode, ToolChoiceMode::kNamed);
  EXPECT_EQ(named.name, "get_time");
}

TEST(ToolSchema, RefusesBadToolChoice) {
  const auto tools = read_tools(json::array({weather_tool(), time_tool()}));
  auto param = [&](const json& choice, bool auto_enabled = true, const std::vector<ToolDefinition>* given = nullptr) {
    return refused_param([&] { read_tool_choice(choice, given ? *given : tools, auto_enabled); });
  };
  EXPECT_EQ(param("any"), "tool_choice");
  EXPECT_EQ(param(5), "tool_choice");
  EXPECT_EQ(param(json::parse(R"({"function": {"name": "get_time"}})")), "tool_choice.type");
  EXPECT_EQ(param(json::parse(R"({"type": "function"})")), "tool_choice.function");
  EXPECT_EQ(param(json::parse(R"({"type": "function", "function": {}})")), "tool_choice.function.name");
  EXPECT_EQ(param(json::parse(R"({"type": "function", "function": {"name": "get_stock"}})")), "tool_choice");
  const std::vector<ToolDefinition> none;
  EXPECT_EQ(param("required", true, &none), "tool_choice");
  EXPECT_EQ(param(json::parse(R"({"type": "function", "function": {"name": "f"}})"), true, &none), "tool_choice");
  // "auto", said or implied by tools, needs --enable-auto-tool-choice.
  EXPECT_EQ(param("auto", false), "tool_choice");
  EXPECT_EQ(param(json(), false), "tool_choice");
}

TEST(ToolSchema, RequiredIsVllmsArraySchema) {
  const auto tools = read_tools(json::array({weather_tool(), time_tool()}));
  const auto schema = tool_choice_schema(tools, {ToolChoiceMode::kRequired, ""});
  ASSERT_TRUE(schema);
  const json expected = json::parse(R"({
    "type": "array", "minItems": 1,
    "items": {"type": "object", "anyOf": [
      {"properties": {"name": {"type": "string", "enum": ["get_weather"]},
                      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                     "unit": {"enum": ["c", "f"]}}, "required": ["city"]}},
       "required": ["name", "parameters"]},
      {"properties": {"name": {"type": "string", "enum": ["get_time"]},
                      "parameters": {"type": "object", "properties": {}}},
       "required": ["name", "parameters"]}]}})");
  EXPECT_EQ(*schema, expected);
  const auto single = tool_choice_schema(tools, {ToolChoiceMode::kRequired, ""}, /*parallel_tool_calls=*/false);
  EXPECT_EQ((*single)["maxItems"], 1);
  // An output the schema admits parses as the calls.
  const ToolCallParse parse = parse_tool_calls(
      ToolCallFormat::kRequired,
      R"([{"name": "get_weather", "parameters": {"city": "Oslo"}}, {"name": "get_time", "parameters": {}}])");
  ASSERT_EQ(parse.calls.size(), 2u);
  EXPECT_EQ(parse.calls[0].arguments, R"({"city": "Oslo"})");
}

TEST(ToolSchema, RequiredMovesDefsUp) {
  const json tools_json = json::parse(R"([
    {"function": {"name": "a", "parameters": {"type": "object", "properties": {"p": {"$ref": "#/$defs/Point"}},
      "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}}}}},
    {"function": {"name": "b", "parameters": {"type": "object", "properties": {"q": {"$ref": "#/$defs/Point"}},
      "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}}}}}])");
  const auto tools = read_tools(tools_json);
  const auto schema = tool_choice_schema(tools, {ToolChoiceMode::kRequired, ""});
  ASSERT_TRUE(schema);
  EXPECT_EQ((*schema)["$defs"]["Point"]["properties"]["x"]["type"], "number");
  for (const json& one : (*schema)["items"]["anyOf"]) EXPECT_FALSE(one["properties"]["parameters"].contains("$defs"));
  // The tools themselves are left as they were.
  EXPECT_TRUE(tools[0].parameters.contains("$defs"));

  json clash = tools_json;
  clash[1]["function"]["parameters"]["$defs"]["Point"]["properties"]["x"]["type"] = "string";
  const auto clashing = read_tools(clash);
  EXPECT_EQ(refused_param([&] {
              tool_choice_schema(clashing, {ToolChoiceMode::kRequired, ""});
            }),
            "tools[1].function.parameters.$defs.Point");
}

TEST(ToolSchema, NamedIsTheParametersSchema) {
  const auto tools = read_tools(json::array({weather_tool(), time_tool()}));
  const auto weather = tool_choice_schema(tools, {ToolChoiceMode::kNamed, "get_weather"});
  ASSERT_TRUE(weather);
  EXPECT_EQ(*weather, weather_tool()["function"]["parameters"]);
  const auto time = tool_choice_schema(tools, {ToolChoiceMode::kNamed, "get_time"});
  EXPECT_EQ(*time, json::parse(R"({"type": "object", "properties": {}})"));
  EXPECT_EQ(refused_param([&] { tool_choice_schema(tools, {ToolChoiceMode::kNamed, "nope"}); }), "tool_choice");
  EXPECT_FALSE(tool_choice_schema(tools, {ToolChoiceMode::kAuto, ""}));
  EXPECT_FALSE(tool_choice_schema(tools, {ToolChoiceMode::kNone, ""}));
  // An output the schema admits parses as a call to that function.
  ToolCallOptions options;
  options.function_name = "get_weather";
  const ToolCallParse parse = parse_tool_calls(ToolCallFormat::kNamed, R"({"city": "Lima", "unit": "c"})", options);
  ASSERT_EQ(parse.calls.size(), 1u);
  EXPECT_EQ(parse.calls[0].name, "get_weather");
  EXPECT_EQ(parse.calls[0].arguments, R"({"city": "Lima", "unit": "c"})");
}

}  // namespace
}  // namespace fg::server
