// cli/render_chat_command.cpp — `fullgraph render-chat`.
//
//   fullgraph render-chat --model DIR --messages FILE.json [--add-generation-prompt]
//                         [--var name=value ...] [--chat-template FILE] [--batch FILE.jsonl]
//
// Single mode prints the rendered prompt byte for byte (no newline added). Batch mode exists so
// that differential tests can render thousands of conversations in one process: each input line
// {"messages": [...], "kwargs": {...}} gives one output line, the rendered prompt as a JSON
// string, or {"error": "..."} when the template (or a refused variable) fails on that line.
#include "cli/render_chat_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "model/model_path.h"
#include "tokenizer/chat_template.h"

namespace fg::cli {

namespace {

struct RenderChatOptions {
  std::string model_dir;
  std::string messages_path;
  std::string batch_path;
  std::string template_path;
  bool add_generation_prompt = false;
  std::vector<std::string> vars;
};

std::string read_input(const std::string& path, const char* what) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::ifstream in(path, std::ios::binary);
  FG_CHECK(in.good(), "{} {}: cannot read the file", what, path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "name=value": the value is JSON when it parses as JSON (true, 3, [..]), else the raw string.
std::pair<std::string, nlohmann::ordered_json> parse_var(const std::string& item) {
  const size_t eq = item.find('=');
  FG_CHECK(eq != std::string::npos && eq > 0, "--var {}: expected name=value", item);
  const std::string name = item.substr(0, eq), text = item.substr(eq + 1);
  nlohmann::ordered_json value = nlohmann::ordered_json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  return {name, std::move(value)};
}

void add_variable(ChatRenderOptions& options, const std::string& name, const nlohmann::ordered_json& value) {
  const auto& allowed = chat_template_variable_names();
  FG_CHECK(std::find(allowed.begin(), allowed.end(), name) != allowed.end(),
           "chat template variable '{}' is not allowed (allowed: {})", name, fmt::join(allowed, ", "));
  if (name == "add_generation_prompt" && value.is_boolean()) {
    options.add_generation_prompt = value.get<bool>();
    return;
  }
  for (auto& [key, slot] : options.variables) {
    if (key == name) {
      slot = value;
      return;
    }
  }
  options.variables.emplace_back(name, value);
}

void write_stdout(const std::string& text) {
  if (!text.empty())
    FG_CHECK(std::fwrite(text.data(), 1, text.size(), stdout) == text.size(), "cannot write to stdout");
  std::fflush(stdout);
}

void run_batch(const ChatTemplate& tmpl, const ChatRenderOptions& defaults, const std::string& path) {
  std::istringstream lines(read_input(path, "--batch"));
  std::string line, out;
  size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::ordered_json item;
    try {
      item = nlohmann::ordered_json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail("--batch {} line {}: invalid JSON: {}", path, number, e.what());
    }
    FG_CHECK(item.is_object() && item.contains("messages"), "--batch {} line {}: expected {{\"messages\": [...]}}",
             path, number);
    nlohmann::ordered_json result;
    try {
      ChatRenderOptions options = defaults;
      if (item.contains("kwargs")) {
        const auto& kwargs = item["kwargs"];
        FG_CHECK(kwargs.is_object(), "'kwargs' must be an object");
        for (auto it = kwargs.begin(); it != kwargs.end(); ++it) add_variable(options, it.key(), it.value());
      }
      result = tmpl.render(item["messages"], options);
    } catch (const Error& e) {
      result = nlohmann::ordered_json{{"error", e.what()}};
    }
    out += result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += '\n';
  }
  write_stdout(out);
}

void run_render_chat(const RenderChatOptions& o) {
  FG_CHECK(o.messages_path.empty() != o.batch_path.empty(), "render-chat: give exactly one of --messages and --batch");
  FG_CHECK(!o.model_dir.empty() || !o.template_path.empty(), "render-chat: give --model, --chat-template or both");
  // With --chat-template the model folder only supplies bos/eos, and may have no template.
  ChatTemplateConfig config;
  if (!o.model_dir.empty())
    config = load_chat_template_config(resolve_model_path(o.model_dir, "", "model"), o.template_path.empty());
  if (!o.template_path.empty()) config.chat_template = read_input(o.template_path, "--chat-template");
  ChatRenderOptions options;
  options.add_generation_prompt = o.add_generation_prompt;
  for (const std::string& item : o.vars) {
    const auto [name, value] = parse_var(item);
    add_variable(options, name, value);
  }
  const ChatTemplate tmpl(config, options.limits);
  if (!o.batch_path.empty()) {
    run_batch(tmpl, options, o.batch_path);
    return;
  }
  nlohmann::ordered_json messages;
  try {
    messages = nlohmann::ordered_json::parse(read_input(o.messages_path, "--messages"));
  } catch (const nlohmann::json::exception& e) {
    fail("--messages {}: invalid JSON: {}", o.messages_path, e.what());
  }
  write_stdout(tmpl.render(messages, options));
}

}  // namespace

void add_render_chat_command(CLI::App& app) {
  auto options = std::make_shared<RenderChatOptions>();
  CLI::App* cmd = app.add_subcommand("render-chat", "Print the prompt a conversation renders to through the model's chat template");
  cmd->add_option("--model", options->model_dir, "Model folder with tokenizer_config.json, or ORG/NAME in the Hugging Face cache");
  cmd->add_option("--messages", options->messages_path, "JSON file with the list of messages ('-' for stdin)");
  cmd->add_option("--batch", options->batch_path,
                  "JSONL file of {\"messages\", \"kwargs\"} lines; prints one JSON string (or error) per line");
  cmd->add_option("--chat-template", options->template_path, "Use this template file instead of the model's");
  cmd->add_flag("--add-generation-prompt", options->add_generation_prompt, "End with the assistant turn's header");
  cmd->add_option("--var", options->vars,
                  "Template variable name=value (JSON if it parses, else a string); allowed: add_generation_prompt, "
                  "bos_token, eos_token, enable_thinking, tools, date_string");
  cmd->callback([options] { run_render_chat(*options); });
}

}  // namespace fg::cli
