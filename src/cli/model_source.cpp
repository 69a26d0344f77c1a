// cli/model_source.cpp — see model_source.h.
#include "cli/model_source.h"

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "model/gguf.h"
#include "model/gguf_tokenizer_metadata.h"
#include "model/model_path.h"
#include "tokenizer/builtin_tokenizer.h"
#include "tokenizer/chat_template_source.h"

namespace fg::cli {

namespace fs = std::filesystem;

std::string generation_config_dir(const std::string& mode, const std::string& model_dir) {
  // vllm: the file is still read for its eos ids, as vLLM does; its sampling defaults are not.
  if (mode == "auto" || mode == "vllm") return model_dir;
  std::error_code ec;
  FG_CHECK(fs::is_directory(mode, ec),
           "--generation-config {}: expected auto, vllm or a folder holding generation_config.json, and there is "
           "no such folder",
           mode);
  if (!fs::exists(fs::path(mode) / "generation_config.json", ec))
    log::warning("--generation-config {}: the folder has no generation_config.json; the engine's defaults apply", mode);
  return mode;
}

ModelSource resolve_model_source(const EngineSetupOptions& o) {
  FG_CHECK(o.shape.empty() || o.model_dir.empty(), "give --model or --shape, not both");
  ModelSource s;
  if (o.model_dir.empty() && !o.revision.empty())
    log::warning("--revision {} applies to a model named ORG/NAME; ignored without --model", o.revision);
  if (!o.model_dir.empty()) {
    s.model_dir = resolve_model_path(o.model_dir, o.revision, "model");
    check_model_folder(s.model_dir);
  }
  s.tokenizer_dir = o.tokenizer.empty() ? s.model_dir : resolve_model_path(o.tokenizer, "", "tokenizer");
  s.generation_config_dir = generation_config_dir(o.generation_config, s.model_dir);
  return s;
}

TextSide load_text_side(const EngineSetupOptions& o, const ModelSource& source, TextNeeds needs) {
  TextSide t;
  const bool builtin = source.tokenizer_dir.empty() && o.shape.empty();
  if (builtin) {
    t.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_json(builtin_tokenizer_json(), "built-in tokenizer"));
    t.chat = {builtin_chat_template(), "<|begin_of_text|>", "<|end_of_text|>"};
  } else if (is_gguf_file(source.tokenizer_dir)) {
    // A GGUF file carries its tokenizer and chat template in its metadata, when it has them.
    if (GgufFile::open(source.tokenizer_dir)->metadata().contains("tokenizer.ggml.model")) {
      GgufTokenizer gguf = load_gguf_tokenizer(source.tokenizer_dir);
      t.tokenizer = std::make_unique<Tokenizer>(std::move(gguf.tokenizer));
      t.chat = std::move(gguf.chat);
    }
  } else if (!source.tokenizer_dir.empty()) {
    const fs::path dir = source.tokenizer_dir;
    if (fs::exists(dir / "tokenizer.json")) {
      t.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_file((dir / "tokenizer.json").string()));
      // A tokenizer without tokenizer_config.json has no template and no special-token names.
      if (fs::exists(dir / "tokenizer_config.json"))
        t.chat = load_chat_template_config(dir.string(), /*require_template=*/false);
    }
  }
  FG_CHECK(t.tokenizer || !needs.tokenizer,
           "{}: text prompts need a tokenizer; give --tokenizer DIR, or the prompt as token ids",
           source.tokenizer_dir.empty()            ? o.shape + " (a named shape)"
           : is_gguf_file(source.tokenizer_dir) ? source.tokenizer_dir + " has no tokenizer metadata"
                                                : (fs::path(source.tokenizer_dir) / "tokenizer.json").string() + " not found");
  if (!o.chat_template.empty()) t.chat.chat_template = chat_template_from_argument(o.chat_template);
  FG_CHECK(!t.chat.chat_template.empty() || !needs.chat_template,
           "{}: the tokenizer has no chat template (tokenizer_config.json, chat_template.jinja or chat_template.json); "
           "give one with --chat-template",
           source.tokenizer_dir.empty() ? o.shape : source.tokenizer_dir);
  return t;
}

}  // namespace fg::cli
