// tokenizer/chat_template.cpp — tokenizer_config.json to a chat template, and rendering a
// conversation with the whitelisted variables (see chat_template.h).
#include "tokenizer/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json/strict_json.h"
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

// A special token as tokenizer_config.json writes it: a string, an AddedToken object with
// "content", or null.
std::string token_text(const JsonView& config, const char* key) {
  const std::optional<JsonView> token = config.get_non_null(key);
  if (!token) return "";
  if (token->raw().is_string()) return token->as_string();
  if (token->raw().is_object()) {
    if (const std::optional<JsonView> content = token->get("content"); content && content->raw().is_string())
      return content->as_string();
  }
  token->fail_expected("a string or an object with a string \"content\"");
}

nlohmann::ordered_json to_ordered(const nlohmann::json& j) { return nlohmann::ordered_json::parse(j.dump()); }

}  // namespace

ChatTemplateConfig chat_template_config_from_json(const nlohmann::json& config, const std::string& source) {
  const JsonView root(config, source, "");
  root.require_object();
  ChatTemplateConfig out;
  out.bos_token = token_text(root, "bos_token");
  out.eos_token = token_text(root, "eos_token");
  const std::optional<JsonView> chat = root.get_non_null("chat_template");
  if (!chat) return out;
  if (chat->raw().is_string()) {
    out.chat_template = chat->as_string();
    return out;
  }
  if (!chat->raw().is_array()) chat->fail_expected("a string or a list of {name, template}");
  for (size_t i = 0; i < chat->size(); ++i) {
    const JsonView entry = chat->item(i);
    if (entry["name"].as_string() == "default") {
      out.chat_template = entry["template"].as_string();
      return out;
    }
    entry["template"].as_string();  // every entry up to the default one must be well-formed
  }
  chat->fail("lists several templates but none named \"default\"");
}

ChatTemplateConfig load_chat_template_config(const std::string& model_dir, bool require_template) {
  const std::filesystem::path dir(model_dir);
  const JsonDocument tokenizer_config = read_json_file((dir / "tokenizer_config.json").string());
  ChatTemplateConfig config = chat_template_config_from_json(tokenizer_config.value, tokenizer_config.source);
  if (config.chat_template.empty()) {
    // Newer checkpoints keep the template beside the config, where transformers also looks.
    if (auto jinja = read_file(dir / "chat_template.jinja")) {
      config.chat_template = *jinja;
    } else if (std::filesystem::exists(dir / "chat_template.json")) {
      // Only a string "chat_template" is taken; anything else leaves the template empty.
      const JsonDocument file = read_json_file((dir / "chat_template.json").string());
      if (file.value.is_object()) {
        if (const auto it = file.value.find("chat_template"); it != file.value.end() && it->is_string())
          config.chat_template = it->get<std::string>();
      }
    }
  }
  FG_CHECK(!require_template || !config.chat_template.empty(), "{}: the tokenizer has no chat template",
           tokenizer_config.source);
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
