// tokenizer/chat_template.h — chat messages to a prompt string, as transformers'
// apply_chat_template(tokenize=False) renders them.
//
// The template and the special tokens come from a model folder's tokenizer_config.json (or the
// chat_template.jinja / chat_template.json files newer checkpoints ship). The template sees
// only a fixed set of variables — messages, add_generation_prompt, bos_token, eos_token,
// enable_thinking, tools, date_string — so a request cannot inject anything else into it.
// Like transformers, `tools` is None unless given, while enable_thinking and date_string stay
// undefined unless given (templates test them with `is defined` and pick their own defaults).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja_template.h"

namespace fg {

struct ChatTemplateConfig {
  std::string chat_template;
  // Empty means the tokenizer has no such token; the template then sees it as undefined.
  std::string bos_token, eos_token;
};

// Reads `model_dir`/tokenizer_config.json. A template given as a list of {name, template}
// yields the one named "default"; bos/eos tokens may be strings or {"content": ...} objects.
// Without `require_template`, a tokenizer that has no template yields an empty one.
ChatTemplateConfig load_chat_template_config(const std::string& model_dir, bool require_template = true);
// The same from an already parsed tokenizer_config.json; `source` names it in errors.
ChatTemplateConfig chat_template_config_from_json(const nlohmann::json& config, const std::string& source);

struct ChatRenderOptions {
  bool add_generation_prompt = false;
  std::optional<bool> enable_thinking;
  std::optional<std::string> date_string;
  nlohmann::ordered_json tools = nullptr;  // null renders as None
  // Further variables by name (CLI --var, request kwargs). Only the names in
  // chat_template_variable_names() are accepted; they override the fields above.
  std::vector<std::pair<std::string, nlohmann::ordered_json>> variables;
  // Used by render_chat(); a ChatTemplate keeps the limits it was built with.
  JinjaLimits limits;
};

// The variables a caller may set (everything the template sees except `messages`).
const std::vector<std::string>& chat_template_variable_names();

// A parsed chat template with its special tokens, for rendering many conversations.
class ChatTemplate {
 public:
  explicit ChatTemplate(const ChatTemplateConfig& config, const JinjaLimits& limits = {});
  // `messages` must be a JSON array; throws fg::Error on a refused variable or a template
  // error (including raise_exception), naming the template line.
  std::string render(const nlohmann::ordered_json& messages, const ChatRenderOptions& options) const;

 private:
  ChatTemplateConfig config_;
  JinjaTemplate template_;
};

std::string render_chat(const ChatTemplateConfig& config, const nlohmann::ordered_json& messages,
                        const ChatRenderOptions& options);
// nlohmann::json sorts object keys; use the ordered_json overload where key order matters
// (tojson of tool arguments prints keys in the order they arrive).
std::string render_chat(const ChatTemplateConfig& config, const nlohmann::json& messages,
                        const ChatRenderOptions& options);

}  // namespace fg
