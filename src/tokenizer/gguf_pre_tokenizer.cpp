// tokenizer/gguf_pre_tokenizer.cpp — tokenizer.ggml.pre to a tokenizer.json pre-tokenizer.
//
// The table is llama.cpp's (llama-vocab.cpp picks regex_exprs per pre type), written as the models'
// own tokenizer.json files write the same split: llama.cpp runs its list of regexes one after the
// other, each splitting the pieces of the last, which is a Sequence of Split(Isolated) steps, and
// its GPT-2 regex is ByteLevel's built-in split. Where llama.cpp hand-edits a model's regex for its
// own regex engine (Qwen2's case-insensitive contractions spelled as [sS]...), the model's original
// spelling is used: the two match the same text.
#include "tokenizer/gguf_pre_tokenizer.h"

#include <array>

#include "core/error.h"

namespace fg {

namespace {

using json = nlohmann::json;

// Llama 3's split (tokenizer.json of Meta-Llama-3; llama.cpp LLAMA_VOCAB_PRE_TYPE_LLAMA3).
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2's split: Llama 3's with single digits (llama.cpp LLAMA_VOCAB_PRE_TYPE_QWEN2, STABLELM2).
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class Split { kGpt2, kDigitsThenGpt2, kLlama3, kQwen2 };

struct PreType {
  const char* name;
  Split split;
};

// Names as llama.cpp's converter writes them to tokenizer.ggml.pre.
constexpr std::array kPreTypes = {
    PreType{"default", Split::kGpt2},          PreType{"gpt2", Split::kGpt2},
    PreType{"mpt", Split::kGpt2},              PreType{"olmo", Split::kGpt2},
    PreType{"jais", Split::kGpt2},             PreType{"smollm", Split::kDigitsThenGpt2},
    PreType{"starcoder", Split::kDigitsThenGpt2}, PreType{"refact", Split::kDigitsThenGpt2},
    PreType{"command-r", Split::kDigitsThenGpt2}, PreType{"codeshell", Split::kDigitsThenGpt2},
    PreType{"exaone", Split::kDigitsThenGpt2}, PreType{"minerva-7b", Split::kDigitsThenGpt2},
    PreType{"llama3", Split::kLlama3},         PreType{"llama-v3", Split::kLlama3},
    PreType{"llama-bpe", Split::kLlama3},      PreType{"falcon3", Split::kLlama3},
    PreType{"pixtral", Split::kLlama3},        PreType{"dbrx", Split::kLlama3},
    PreType{"smaug-bpe", Split::kLlama3},      PreType{"qwen2", Split::kQwen2},
    PreType{"deepseek-r1-qwen", Split::kQwen2}, PreType{"stablelm2", Split::kQwen2},
    PreType{"megrez", Split::kQwen2},
};

json split_step(const char* regex) {
  return json{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

json byte_level(bool use_regex) {
  return json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

}  // namespace

json gguf_byte_level_pre_tokenizer(std::string_view pre, const std::string& source) {
  const std::string_view name = pre.empty() ? std::string_view("default") : pre;
  for (const PreType& type : kPreTypes) {
    if (name != type.name) continue;
    switch (type.split) {
      case Split::kGpt2:
        return byte_level(true);
      case Split::kDigitsThenGpt2:  // tokenizers' Digits(individual_digits): every \p{N} on its own
        return json{{"type", "Sequence"}, {"pretokenizers", json::array({split_step(R"(\p{N})"), byte_level(true)})}};
      case Split::kLlama3:
        return json{{"type", "Sequence"}, {"pretokenizers", json::array({split_step(kLlama3), byte_level(false)})}};
      case Split::kQwen2:
        return json{{"type", "Sequence"}, {"pretokenizers", json::array({split_step(kQwen2), byte_level(false)})}};
    }
  }
  std::string known;
  for (const PreType& type : kPreTypes) known += (known.empty() ? "" : ", ") + std::string(type.name);
  fail("{}: tokenizer.ggml.pre \"{}\" names a pre-tokenizer fullgraph does not know (known: {})", source, name, known);
}

}  // namespace fg
