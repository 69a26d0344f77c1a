// tokenizer/gguf_tokenizer.cpp — GGUF tokenizer metadata to a tokenizer.json document, loaded by
// Tokenizer::from_json.
//
// The document is the one Hugging Face's GGUF converter (transformers' gguf_tokenizer_mapping)
// builds: byte-level vocabularies as GPT2Tokenizer spells them, SentencePiece ones as the Llama-2
// tokenizer.json does (Prepend ▁ and Replace " " by ▁ as the normalizer, which prepends after every
// added token as llama.cpp's add_space_prefix does), control tokens as special added tokens. Going
// through tokenizer.json keeps one tokenizer: the loader's checks and the encoder are the same.
#include "tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/gguf_pre_tokenizer.h"
#include "tokenizer/gguf_spm_merges.h"

namespace fg {

namespace {

using json = nlohmann::json;  // sorted keys: ordered_json inserts in linear time, too slow for 150k tokens

constexpr const char* kSpace = "\xE2\x96\x81";  // ▁, SentencePiece's spelling of a space

void check_spec(const GgufTokenizerSpec& s, const std::string& source) {
  const size_t n = s.tokens.size();
  FG_CHECK(n > 0, "{}: tokenizer.ggml.tokens is missing or empty", source);
  FG_CHECK(s.token_types.empty() || s.token_types.size() == n,
           "{}: tokenizer.ggml.token_type has {} entries for {} tokens", source, s.token_types.size(), n);
  FG_CHECK(s.scores.empty() || s.scores.size() == n, "{}: tokenizer.ggml.scores has {} entries for {} tokens", source,
           s.scores.size(), n);
  for (size_t id = 0; id < s.token_types.size(); ++id)
    FG_CHECK(s.token_types[id] >= 0 && s.token_types[id] <= 6,
             "{}: tokenizer.ggml.token_type[{}] = {} is no token type (0..6)", source, id, s.token_types[id]);
  const std::pair<const char*, const std::optional<int64_t>*> ids[] = {
      {"bos_token_id", &s.bos_id}, {"eos_token_id", &s.eos_id}, {"eot_token_id", &s.eot_id},
      {"eom_token_id", &s.eom_id}, {"unknown_token_id", &s.unk_id}, {"padding_token_id", &s.pad_id}};
  for (const auto& [key, id] : ids)
    FG_CHECK(!*id || (**id >= 0 && static_cast<uint64_t>(**id) < n), "{}: tokenizer.ggml.{} = {} is not a token id (0..{})",
             source, key, id->value_or(0), n - 1);
}

GgufTokenType type_of(const GgufTokenizerSpec& s, size_t id) {
  return s.token_types.empty() ? GgufTokenType::kNormal : static_cast<GgufTokenType>(s.token_types[id]);
}

// The vocabulary as tokenizer.json spells it, refusing a token spelled twice (tokenizer.json maps
// spellings to ids, so the second could never be produced or looked up).
json vocabulary(const std::vector<std::string>& spellings, const std::string& source) {
  json vocab = json::object();
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t id = 0; id < spellings.size(); ++id) {
    if (auto [it, fresh] = seen.try_emplace(spellings[id], id); !fresh)
      fail("{}: tokenizer.ggml.tokens spells ids {} and {} the same (\"{}\")", source, it->second, id, spellings[id]);
    vocab[spellings[id]] = id;
  }
  return vocab;
}

json added_token(const std::string& content, size_t id, bool special) {
  return json{{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
              {"rstrip", false},   {"normalized", false}, {"special", special}};
}

// TemplateProcessing adding BOS and/or EOS as tokenizer_config's add_bos_token/add_eos_token ask.
json post_processor(const GgufTokenizerSpec& s, const std::vector<std::string>& spellings, bool add_bos, bool add_eos,
                    const std::string& source) {
  json single = json::array(), pair = json::array(), specials = json::object();
  const auto special = [&](const std::optional<int64_t>& id, const char* key, int type_id, json& out) {
    FG_CHECK(id.has_value(), "{}: tokenizer.ggml.add_{}_token is set but tokenizer.ggml.{}_token_id is missing", source,
             key, key);
    const std::string& token = spellings[*id];
    out.push_back({{"SpecialToken", {{"id", token}, {"type_id", type_id}}}});
    specials[token] = {{"id", token}, {"ids", {*id}}, {"tokens", {token}}};
  };
  const auto sequence = [](const char* name, int type_id) { return json{{"Sequence", {{"id", name}, {"type_id", type_id}}}}; };
  if (add_bos) special(s.bos_id, "bos", 0, single);
  single.push_back(sequence("A", 0));
  if (add_eos) special(s.eos_id, "eos", 0, single);
  if (add_bos) special(s.bos_id, "bos", 0, pair);
  pair.push_back(sequence("A", 0));
  if (add_eos) special(s.eos_id, "eos", 0, pair);
  if (add_bos) special(s.bos_id, "bos", 1, pair);
  pair.push_back(sequence("B", 1));
  if (add_eos) special(s.eos_id, "eos", 1, pair);
  return json{{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

json split_merges(const std::vector<std::string>& merges, const std::string& source) {
  json out = json::array();
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const size_t space = m.find(' ');
    FG_CHECK(space != std::string::npos && m.find(' ', space + 1) == std::string::npos,
             "{}: tokenizer.ggml.merges[{}] = \"{}\" is not two tokens separated by one space", source, i, m);
    out.push_back(json::array({m.substr(0, space), m.substr(space + 1)}));
  }
  return out;
}

// Byte-level BPE (tokenizer.ggml.model = gpt2).
json gpt2_document(const GgufTokenizerSpec& s, bool add_bos, bool add_eos, const std::string& source) {
  // A token written with characters outside the byte alphabet is respelled from its UTF-8 bytes, as
  // transformers does; control tokens so written are llama.cpp mislabels it leaves out, and so do we.
  std::vector<std::string> spellings(s.tokens.size());
  std::vector<bool> in_alphabet(s.tokens.size());
  for (size_t id = 0; id < s.tokens.size(); ++id) {
    in_alphabet[id] = byte_level::unspell(s.tokens[id]).has_value();
    spellings[id] = in_alphabet[id] ? s.tokens[id] : byte_level::spell(s.tokens[id]);
  }
  json added = json::array();
  for (size_t id = 0; id < s.tokens.size(); ++id) {
    const GgufTokenType type = type_of(s, id);
    if ((type == GgufTokenType::kControl || type == GgufTokenType::kUserDefined) && in_alphabet[id])
      added.push_back(added_token(s.tokens[id], id, type == GgufTokenType::kControl));
  }
  json model = {{"type", "BPE"},         {"dropout", nullptr},       {"unk_token", nullptr},
                {"fuse_unk", false},      {"byte_fallback", false},   {"ignore_merges", false},
                {"vocab", vocabulary(spellings, source)}, {"merges", split_merges(s.merges, source)}};
  return json{{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", nullptr},
              {"pre_tokenizer", gguf_byte_level_pre_tokenizer(s.pre, source)},
              {"post_processor", post_processor(s, spellings, add_bos, add_eos, source)},
              {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
              {"model", model}};
}

// SentencePiece-style BPE with byte fallback (tokenizer.ggml.model = llama).
json llama_document(const GgufTokenizerSpec& s, bool add_bos, bool add_eos, const std::string& source) {
  // llama.cpp prefixes a space unless the file says not to.
  const bool space_prefix = s.add_space_prefix.value_or(true);
  json added = json::array();
  for (size_t id = 0; id < s.tokens.size(); ++id) {
    // The unknown token too: SentencePiece never reads "<unk>" in text as letters, nor does llama.cpp.
    const GgufTokenType type = type_of(s, id);
    if (type == GgufTokenType::kControl || type == GgufTokenType::kUnknown || type == GgufTokenType::kUserDefined)
      added.push_back(added_token(s.tokens[id], id, type != GgufTokenType::kUserDefined));
  }
  json merges;
  if (!s.merges.empty()) {
    merges = split_merges(s.merges, source);
  } else {
    FG_CHECK(!s.scores.empty(), "{}: a llama tokenizer needs tokenizer.ggml.merges or tokenizer.ggml.scores", source);
    merges = json::array();
    for (auto& [l, r] : merges_from_scores(s.tokens, s.scores)) merges.push_back(json::array({std::move(l), std::move(r)}));
  }
  json normalizers = json::array();
  if (space_prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", kSpace}});
  normalizers.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}});
  json decoders = json::array({{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                               {{"type", "ByteFallback"}},
                               {{"type", "Fuse"}}});
  if (space_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  json model = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", s.unk_id ? json(s.tokens[*s.unk_id]) : json(nullptr)},
                {"fuse_unk", true},
                {"byte_fallback", true},
                {"vocab", vocabulary(s.tokens, source)},
                {"merges", std::move(merges)}};
  return json{{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
              {"pre_tokenizer", nullptr},
              {"post_processor", post_processor(s, s.tokens, add_bos, add_eos, source)},
              {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
              {"model", model}};
}

// llama.cpp adds BOS to SentencePiece vocabularies that do not say otherwise (and transformers'
// GGUF loader follows it); byte-level ones add nothing unless asked.
bool default_add_bos(const GgufTokenizerSpec& s) { return s.add_bos.value_or(s.model == "llama"); }

}  // namespace

std::string gguf_tokenizer_json(const GgufTokenizerSpec& spec, const std::string& source) {
  check_spec(spec, source);
  const bool add_bos = default_add_bos(spec), add_eos = spec.add_eos.value_or(false);
  if (spec.model == "gpt2") return gpt2_document(spec, add_bos, add_eos, source).dump();
  if (spec.model == "llama") return llama_document(spec, add_bos, add_eos, source).dump();
  fail("{}: tokenizer.ggml.model \"{}\" is not supported (supported: gpt2, llama)", source, spec.model);
}

GgufTokenizer tokenizer_from_gguf(const GgufTokenizerSpec& spec, const std::string& source) {
  const auto id = [](const std::optional<int64_t>& v) -> std::optional<int32_t> {
    return v ? std::optional<int32_t>(static_cast<int32_t>(*v)) : std::nullopt;
  };
  GgufTokenizer t{Tokenizer::from_json(gguf_tokenizer_json(spec, source), source + " (tokenizer.* metadata)"),
                  ChatTemplateConfig{spec.chat_template, spec.bos_id ? spec.tokens[*spec.bos_id] : std::string(),
                                     spec.eos_id ? spec.tokens[*spec.eos_id] : std::string()},
                  id(spec.bos_id), id(spec.eos_id), id(spec.eot_id), id(spec.eom_id), id(spec.unk_id), id(spec.pad_id),
                  default_add_bos(spec), spec.add_eos.value_or(false), {}};
  for (const auto& stop : {t.eos_id, t.eot_id, t.eom_id})
    if (stop && std::find(t.stop_ids.begin(), t.stop_ids.end(), *stop) == t.stop_ids.end()) t.stop_ids.push_back(*stop);
  return t;
}

}  // namespace fg
