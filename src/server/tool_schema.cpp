// server/tool_schema.cpp — see tool_schema.h.
#include "server/tool_schema.h"

#include <fmt/format.h>

#include <map>

#include "core/json/strict_json.h"
#include "server/api_error.h"

namespace fg::server {

namespace {

using nlohmann::json;

const char* type_name(const json& value) { return value.type_name(); }

// Names in messages are quoted from the request: cut long ones.
std::string quote_name(const std::string& text) { return fmt::format("'{}'", clip_for_message(text, 100)); }

// A schema in a position where a subschema stands: an object, or true/false.
bool is_subschema(const json& value) { return value.is_object() || value.is_boolean(); }

void check_parameters(const json& parameters, const std::string& param) {
  if (!parameters.is_object()) {
    bad_request(param, fmt::format("{} must be a JSON schema object, found {}", param, type_name(parameters)));
  }
  if (const auto type = parameters.find("type"); type != parameters.end() && *type != "object") {
    bad_request(param + ".type",
                fmt::format("{}.type must be \"object\": a function's arguments are a JSON object, found {}", param,
                            clip_for_message(type->dump(), 100)));
  }
  if (const auto properties = parameters.find("properties"); properties != parameters.end()) {
    if (!properties->is_object()) {
      bad_request(param + ".properties",
                  fmt::format("{}.properties must be an object, found {}", param, type_name(*properties)));
    }
    for (const auto& [key, value] : properties->items()) {
      if (!is_subschema(value)) {
        const std::string at = fmt::format("{}.properties.{}", param, key);
        bad_request(at, fmt::format("{} must be a JSON schema (an object), found {}", at, type_name(value)));
      }
    }
  }
  if (const auto required = parameters.find("required"); required != parameters.end()) {
    bool strings = required->is_array();
    if (strings) {
      for (const json& item : *required) strings = strings && item.is_string();
    }
    if (!strings) {
      bad_request(param + ".required", fmt::format("{}.required must be an array of property names", param));
    }
  }
  if (const auto defs = parameters.find("$defs"); defs != parameters.end()) {
    if (!defs->is_object()) {
      bad_request(param + ".$defs", fmt::format("{}.$defs must be an object, found {}", param, type_name(*defs)));
    }
    for (const auto& [key, value] : defs->items()) {
      if (!is_subschema(value)) {
        const std::string at = fmt::format("{}.$defs.{}", param, key);
        bad_request(at, fmt::format("{} must be a JSON schema (an object), found {}", at, type_name(value)));
      }
    }
  }
}

ToolDefinition read_tool(const json& tool, size_t i) {
  const std::string at = fmt::format("tools[{}]", i);
  if (!tool.is_object()) bad_request(at, fmt::format("{} must be an object, found {}", at, type_name(tool)));
  if (const auto type = tool.find("type"); type != tool.end() && *type != "function") {
    bad_request(at + ".type",
                fmt::format("{}.type must be \"function\", found {}", at, clip_for_message(type->dump(), 100)));
  }
  const auto function = tool.find("function");
  if (function == tool.end() || !function->is_object()) {
    bad_request(at + ".function",
                fmt::format("{}.function must be an object with the function's name and parameters", at));
  }
  const std::string fn = at + ".function";
  ToolDefinition out;
  const auto name = function->find("name");
  if (name == function->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    bad_request(fn + ".name", fmt::format("{}.name must be a non-empty string", fn));
  }
  out.name = name->get<std::string>();
  if (const auto description = function->find("description");
      description != function->end() && !description->is_null()) {
    if (!description->is_string()) {
      bad_request(fn + ".description",
                  fmt::format("{}.description must be a string, found {}", fn, type_name(*description)));
    }
    out.description = description->get<std::string>();
  }
  if (const auto parameters = function->find("parameters"); parameters != function->end() && !parameters->is_null()) {
    check_parameters(*parameters, fn + ".parameters");
    out.parameters = *parameters;
  }
  if (const auto strict = function->find("strict"); strict != function->end() && !strict->is_null()) {
    if (!strict->is_boolean()) {
      bad_request(fn + ".strict", fmt::format("{}.strict must be a boolean, found {}", fn, type_name(*strict)));
    }
    out.strict = strict->get<bool>();
  }
  return out;
}

// A tool's parameters as the schemas use them: {} and absent mean no arguments.
json parameters_schema(const ToolDefinition& tool) {
  if (tool.parameters.is_null() || tool.parameters.empty()) return {{"type", "object"}, {"properties", json::object()}};
  return tool.parameters;
}

}  // namespace

std::vector<ToolDefinition> read_tools(const json& tools) {
  std::vector<ToolDefinition> out;
  if (tools.is_null()) return out;
  if (!tools.is_array()) bad_request("tools", fmt::format("tools must be an array, found {}", type_name(tools)));
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < tools.size(); ++i) {
    out.push_back(read_tool(tools[i], i));
    const auto [it, inserted] = seen.emplace(out.back().name, i);
    if (!inserted) {
      const std::string param = fmt::format("tools[{}].function.name", i);
      bad_request(param, fmt::format("{}: the function name {} is also tools[{}]'s; names must be distinct", param,
                                     quote_name(out.back().name), it->second));
    }
  }
  return out;
}

ToolChoice read_tool_choice(const json& tool_choice, const std::vector<ToolDefinition>& tools,
                            bool auto_tool_choice_enabled) {
  ToolChoice out;
  if (tool_choice.is_null()) {
    out.mode = tools.empty() ? ToolChoiceMode::kNone : ToolChoiceMode::kAuto;
  } else if (tool_choice.is_string()) {
    const std::string& mode = tool_choice.get_ref<const std::string&>();
    if (mode == "none") {
      out.mode = ToolChoiceMode::kNone;
    } else if (mode == "auto") {
      out.mode = ToolChoiceMode::kAuto;
    } else if (mode == "required") {
      out.mode = ToolChoiceMode::kRequired;
    } else {
      bad_request("tool_choice", fmt::format("tool_choice must be \"none\", \"auto\", \"required\" or {{\"type\": "
                                             "\"function\", \"function\": {{\"name\": ...}}}}, found {}",
                                             quote_name(mode)));
    }
  } else if (tool_choice.is_object()) {
    const auto type = tool_choice.find("type");
    if (type == tool_choice.end() || *type != "function") {
      bad_request("tool_choice.type", "tool_choice.type must be \"function\" when tool_choice is an object");
    }
    const auto function = tool_choice.find("function");
    if (function == tool_choice.end() || !function->is_object()) {
      bad_request("tool_choice.function", "tool_choice.function must be an object {\"name\": ...}");
    }
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string()) {
      bad_request("tool_choice.function.name", "tool_choice.function.name must be a string");
    }
    out.mode = ToolChoiceMode::kNamed;
    out.name = name->get<std::string>();
  } else {
    bad_request("tool_choice",
                fmt::format("tool_choice must be a string or an object, found {}", type_name(tool_choice)));
  }

  if ((out.mode == ToolChoiceMode::kRequired || out.mode == ToolChoiceMode::kNamed) && tools.empty()) {
    bad_request("tool_choice", "tool_choice names a tool or requires one, but the request gives no tools");
  }
  if (out.mode == ToolChoiceMode::kNamed) {
    bool found = false;
    for (const ToolDefinition& tool : tools) found = found || tool.name == out.name;
    if (!found) {
      bad_request("tool_choice", fmt::format("the function {} in tool_choice is not one of the request's tools",
                                             quote_name(out.name)));
    }
  }
  if (out.mode == ToolChoiceMode::kAuto && !auto_tool_choice_enabled) {
    bad_request("tool_choice",
                "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set");
  }
  return out;
}

std::optional<json> tool_choice_schema(const std::vector<ToolDefinition>& tools, const ToolChoice& choice,
                                       bool parallel_tool_calls) {
  if (choice.mode == ToolChoiceMode::kNamed) {
    for (const ToolDefinition& tool : tools) {
      if (tool.name == choice.name) return parameters_schema(tool);
    }
    bad_request("tool_choice", fmt::format("the function {} in tool_choice is not one of the request's tools",
                                           quote_name(choice.name)));
  }
  if (choice.mode != ToolChoiceMode::kRequired) return std::nullopt;

  json any_of = json::array();
  json defs = json::object();
  for (size_t i = 0; i < tools.size(); ++i) {
    json parameters = parameters_schema(tools[i]);
    if (const auto found = parameters.find("$defs"); found != parameters.end()) {
      for (const auto& [key, value] : found->items()) {
        if (const auto known = defs.find(key); known != defs.end() && *known != value) {
          const std::string param = fmt::format("tools[{}].function.parameters.$defs.{}", i, key);
          bad_request(param, fmt::format("{}: another tool defines {} differently; tool_choice \"required\" "
                                         "puts every tool's $defs in one schema",
                                         param, quote_name(key)));
        }
        defs[key] = value;
      }
      parameters.erase("$defs");
    }
    json name = {{"type", "string"}, {"enum", json::array({tools[i].name})}};
    json one = json::object();
    one["properties"] = {{"name", std::move(name)}, {"parameters", std::move(parameters)}};
    one["required"] = json::array({"name", "parameters"});
    any_of.push_back(std::move(one));
  }
  json schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"type", "object"}, {"anyOf", any_of}}}};
  if (!parallel_tool_calls) schema["maxItems"] = 1;
  if (!defs.empty()) schema["$defs"] = defs;
  return schema;
}

}  // namespace fg::server
