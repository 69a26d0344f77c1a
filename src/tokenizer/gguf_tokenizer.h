// tokenizer/gguf_tokenizer.h — a Tokenizer, its chat template and its special ids from the
// tokenizer.* metadata of a GGUF file (llama.cpp's format).
//
// The metadata are mapped onto the tokenizer.json pipeline, not onto a second tokenizer: the
// tokenizer.json document Hugging Face's own GGUF converter would build for the same file is
// written in memory and loaded by Tokenizer::from_json, so every refusal and every encoding rule is
// the one tokenizer.json files get. tokenizer/ sits below model/, so this takes the values as
// plain vectors; model/gguf_tokenizer_metadata.h reads them from a GgufMetadata.
//
//   gpt2   byte-level BPE with the file's merges; the split regex is chosen by tokenizer.ggml.pre
//          as llama.cpp chooses it (see gguf_pre_tokenizer.cpp), an unknown pre type is refused.
//   llama  SentencePiece-style BPE: ▁ for spaces (prepended when add_space_prefix), <0xNN> byte
//          fallback, merges from the file or, as usual for these files, derived from the scores.
// Token types follow llama.cpp: control (3) tokens become special added tokens, user-defined (4)
// ones plain added tokens, both matched whole in the text; normal (1), unknown (2), unused (5) and
// byte (6) tokens are plain vocabulary entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace fg {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class GgufTokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// The tokenizer.* keys of a GGUF file, as plain values. Absent optional keys stay empty.
struct GgufTokenizerSpec {
  std::string model;                 // tokenizer.ggml.model: "gpt2" or "llama"
  std::string pre;                   // tokenizer.ggml.pre; empty when absent (means "default")
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens, by id
  std::vector<float> scores;         // tokenizer.ggml.scores (llama), empty or one per token
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type, empty or one per token
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right"
  std::optional<int64_t> bos_id, eos_id, eot_id, eom_id, unk_id, pad_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
  std::string chat_template;  // tokenizer.chat_template; empty when absent
};

struct GgufTokenizer {
  Tokenizer tokenizer;
  // The template with the bos/eos token strings, as transformers' GGUF loader fills
  // tokenizer_config (bos_token = tokens[bos_id] and so on).
  ChatTemplateConfig chat;
  std::optional<int32_t> bos_id, eos_id, eot_id, eom_id, unk_id, pad_id;
  bool add_bos = false, add_eos = false;
  // The ids that end a generation: eos, eot and eom, each once, in that order.
  std::vector<int32_t> stop_ids;
};

// Builds the tokenizer; `source` (the file's path) names it in errors. Fails with the key named
// on anything missing, inconsistent or not supported.
GgufTokenizer tokenizer_from_gguf(const GgufTokenizerSpec& spec, const std::string& source);

// The tokenizer.json text tokenizer_from_gguf loads (for tests and `fullgraph` diagnostics).
std::string gguf_tokenizer_json(const GgufTokenizerSpec& spec, const std::string& source);

}  // namespace fg
