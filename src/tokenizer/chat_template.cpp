// tokenizer/chat_template.cpp — tokenizer_config.json to a chat template, and rendering a
// conversation with the whitelisted variables (see chat_template.h).
#include "tokenizer/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tokenizer/jinja_json.h"

namespace fg {

namespace {

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json parse_json_file(const std::filesystem::path& path, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", path.string(), e.what());
  }
}

// A special token as tokenizer_config.json writes it: a string, an AddedToken object with
// "content", or null.
std::string token_text(const nlohmann::json& config, const char* key, const std::string& source) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  fail("{}: '{}' must be a string or an object with \"content\"", source, key);
}

nlohmann::ordered_json to_ordered(const nlohmann::json& j) { return nlohmann::ordered_json::parse(j.dump()); }

}  // namespace

ChatTemplateConfig chat_template_config_from_json(const nlohmann::json& config, const std::string& source) {
  FG_CHECK(config.is_object(), "{}: expected a JSON object", source);
  ChatTemplateConfig out;
  out.bos_token = token_text(config, "bos_token", source);
  out.eos_token = token_text(config, "eos_token", source);
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return out;
  if (it->is_string()) {
    out.chat_template = it->get<std::string>();
    return out;
  }
  FG_CHECK(it->is_array(), "{}: 'chat_template' must be a string or a list of {{name, template}}", source);
  for (const auto& entry : *it) {
    FG_CHECK(entry.is_object() && entry.contains("name") && entry.contains("template") && entry["name"].is_string() &&
                 entry["template"].is_string(),
             "{}: each 'chat_template' entry must have string 'name' and 'template'", source);
    if (entry["name"] == "default") {
      out.chat_template = entry["template"].get<std::string>();
      return out;
    }
  }
  fail("{}: 'chat_template' lists several templates but none named \"default\"", source);
}

ChatTemplateConfig load_chat_template_config(const std::string& model_dir, bool require_template) {
  const std::filesystem::path dir(model_dir);
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  const std::optional<std::string> text = read_file(config_path);
  FG_CHECK(text.has_value(), "{}: cannot read the file", config_path.string());
  ChatTemplateConfig config = chat_template_config_from_json(parse_json_file(config_path, *text), config_path.string());
  if (config.chat_template.empty()) {
    // Newer checkpoints keep the template beside the config, where transformers also looks.
    if (auto jinja = read_file(dir / "chat_template.jinja")) {
      config.chat_template = *jinja;
    } else if (auto json = read_file(dir / "chat_template.json")) {
      const nlohmann::json j = parse_json_file(dir / "chat_template.json", *json);
      if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string())
        config.chat_template = j["chat_template"].get<std::string>();
    }
  }
  FG_CHECK(!require_template || !config.chat_template.empty(), "{}: the tokenizer has no chat template",
           config_path.string());
  return config;
}

const std::vector<std::string>& chat_template_variable_names() {
  static const std::vector<std::string> names = {"add_generation_prompt", "bos_token", "eos_token",
                                                 "enable_thinking",       "tools",     "date_string"};
  return names;
}

ChatTemplate::ChatTemplate(const ChatTemplateConfig& config, const JinjaLimits& limits)
    : config_(config), template_(config.chat_template, limits) {}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const ChatRenderOptions& options) const {
  FG_CHECK(messages.is_array(), "chat messages must be a JSON array, got {}", messages.type_name());
  std::vector<std::pair<std::string, jinja::Value>> vars;
  auto set = [&vars](const std::string& name, jinja::Value value) {
    for (auto& [key, slot] : vars) {
      if (key == name) {
        slot = std::move(value);
        return;
      }
    }
    vars.emplace_back(name, std::move(value));
  };
  try {
    set("messages", jinja::value_from_json(messages));
    set("add_generation_prompt", jinja::Value::boolean(options.add_generation_prompt));
    if (!config_.bos_token.empty()) set("bos_token", jinja::Value::string(config_.bos_token));
    if (!config_.eos_token.empty()) set("eos_token", jinja::Value::string(config_.eos_token));
    set("tools", jinja::value_from_json(options.tools));
    if (options.enable_thinking) set("enable_thinking", jinja::Value::boolean(*options.enable_thinking));
    if (options.date_string) set("date_string", jinja::Value::string(*options.date_string));
    const auto& allowed = chat_template_variable_names();
    for (const auto& [name, value] : options.variables) {
      FG_CHECK(std::find(allowed.begin(), allowed.end(), name) != allowed.end(),
               "chat template variable '{}' is not allowed (allowed: {})", name, fmt::join(allowed, ", "));
      set(name, jinja::value_from_json(value));
    }
  } catch (const jinja::TemplateError& e) {
    fail("chat messages: {}", e.message());
  }
  return template_.render(std::move(vars));
}

std::string render_chat(const ChatTemplateConfig& config, const nlohmann::ordered_json& messages,
                        const ChatRenderOptions& options) {
  return ChatTemplate(config, options.limits).render(messages, options);
}

std::string render_chat(const ChatTemplateConfig& config, const nlohmann::json& messages,
                        const ChatRenderOptions& options) {
  return render_chat(config, to_ordered(messages), options);
}

}  // namespace fg
