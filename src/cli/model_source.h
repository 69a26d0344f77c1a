// cli/model_source.h — from the model options of the command line (--model, --revision,
// --tokenizer, --chat-template, --generation-config) to folders and files, once, for every
// command that builds a model: which folder holds the weights, which the tokenizer, where
// generation_config.json is read from, and the tokenizer and chat template themselves.
#pragma once

#include <memory>
#include <string>

#include "cli/engine_setup.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace fg::cli {

struct ModelSource {
  std::string model_dir;      // a folder holding config.json; empty: the built-in model or --shape
  std::string tokenizer_dir;  // --tokenizer's folder, else model_dir
  // Where generation_config.json is read from (--generation-config: the model's folder under auto
  // and vllm, or the folder given); empty for a model without a folder.
  std::string generation_config_dir;
};

// Resolves --model (a folder, or ORG/NAME in the Hugging Face cache at --revision) and checks
// that it is a model folder; resolves --tokenizer the same way (at its default revision, as vLLM
// does when --tokenizer-revision is not given); applies --generation-config.
ModelSource resolve_model_source(const EngineSetupOptions& o);

// --generation-config against the model folder: "auto" reads the model's, "vllm" none, anything
// else must be a folder (its generation_config.json is read if it has one, as vLLM does).
std::string generation_config_dir(const std::string& mode, const std::string& model_dir);

struct TextSide {
  std::unique_ptr<Tokenizer> tokenizer;  // null: no tokenizer (a --shape, a folder without one)
  ChatTemplateConfig chat;               // empty template: none
};

struct TextNeeds {
  bool tokenizer = false;  // throw when there is no tokenizer, instead of returning none
  bool chat_template = false;  // throw when there is no chat template
};

// The tokenizer and chat template: --tokenizer's folder, else the model folder's, else (no
// model, no --shape) the built-in ones; --chat-template replaces the template.
TextSide load_text_side(const EngineSetupOptions& o, const ModelSource& source, TextNeeds needs);

}  // namespace fg::cli
