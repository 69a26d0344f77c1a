// fuzz/fuzz_chat_template.cpp — libFuzzer target for the chat-template engine.
//
// The input is a template. It is parsed and rendered with a fixed small conversation (system
// prompt, tool call, unicode, a tools list), so that fuzzed templates reach real values through
// every kind of access. Any outcome other than a rendered string or an fg::Error is a finding:
// a crash, a sanitizer report, another exception type, or a stack overflow on deep nesting. The
// limits are tighter than the defaults so that each input stays fast; they are still the same
// code paths the defaults guard.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "tokenizer/chat_template.h"

namespace {

const nlohmann::ordered_json& conversation() {
  static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are terse.\n  Answer in one line. "},
    {"role": "user", "content": "Weather in Zürich? 😀 {\"unit\": \"C\"}"},
    {"role": "assistant", "content": "", "reasoning_content": "need a tool",
     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "days": 2, "precise": 0.5}}}]},
    {"role": "tool", "content": "{\"temperature\": 21.5}"},
    {"role": "assistant", "content": "<think>\nok\n</think>\n\nIt is 21.5 °C."},
    {"role": "user", "content": ["not", "a", "string", 1, null, true]}
  ])");
  return messages;
}

const nlohmann::ordered_json& tools() {
  static const nlohmann::ordered_json list = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 1}}}}}
  ])");
  return list;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fg::ChatTemplateConfig config;
  config.chat_template.assign(reinterpret_cast<const char*>(data), size);
  config.bos_token = "<s>";
  config.eos_token = "</s>";
  fg::ChatRenderOptions options;
  options.add_generation_prompt = (size & 1) != 0;
  options.enable_thinking = (size & 2) != 0;
  options.tools = tools();
  options.limits.max_steps = 200'000;
  options.limits.max_output_bytes = 64 << 10;
  try {
    const std::string prompt = fg::render_chat(config, conversation(), options);
    if (prompt.size() > options.limits.max_output_bytes) __builtin_trap();  // the cap must hold
  } catch (const fg::Error&) {
    // Syntax errors, runtime errors and limits are all expected outcomes.
  }
  return 0;
}
