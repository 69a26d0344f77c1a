// core/json/strict_json.h — the one reader of the JSON a model folder holds: safetensors headers
// and model.safetensors.index.json, config.json, generation_config.json, tokenizer.json,
// tokenizer_config.json and chat_template.json.
//
// These files come from the internet, so the parser refuses what would make later stages unsafe
// or ambiguous: input over a size limit; bytes that are not UTF-8 (so that no message quotes
// broken text); nesting past a depth limit, checked as each container opens, so that nothing
// recursive (copying, dumping or destroying a DOM) ever meets a deep document; and duplicate
// object keys, which nlohmann would silently resolve to the last one while other readers take
// the first. Every refusal names the source, the JSON path where there is one, and the byte
// offset; none carries nlohmann's internal "[json.exception...]" tag.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json_view.h"

namespace fg {

struct JsonLimits {
  size_t max_bytes = size_t{1} << 30;  // real tokenizer.json files are tens of MiB
  size_t max_depth = 64;               // real files nest about 6 deep, a safetensors header 3
};

// What messages call a document: the file (or another origin, e.g. "built-in tokenizer") and,
// where the JSON is only a part of it, which part ("header" of a safetensors file).
struct JsonSource {
  std::string file;
  std::string part;
  std::string name() const { return part.empty() ? file : file + ": " + part; }
};

// A parsed document. nlohmann::json keeps object keys sorted; `top_level_keys` keeps the order
// the document wrote the root object's keys in (a safetensors header lists its tensors in it).
struct JsonDocument {
  nlohmann::json value;
  std::vector<std::string> top_level_keys;
  std::string source;  // JsonSource::name(): what every message of the views starts with

  // The root, path "". Views point into this document: keep it alive, and do not move it.
  JsonView root() const { return JsonView(value, source, ""); }
};

// Parses `text` (the whole of it: only whitespace may follow the value). Offsets in messages
// count bytes from the start of `text`.
JsonDocument parse_strict_json(std::string_view text, const JsonSource& source, const JsonLimits& limits = {});

// Reads and parses the file at `path`, which must be a regular file of at most limits.max_bytes.
// Errors about the file name `path`; errors about its JSON name `source` (by default the path).
JsonDocument read_json_file(const std::string& path, const JsonLimits& limits = {});
JsonDocument read_json_file(const std::string& path, const JsonSource& source, const JsonLimits& limits = {});

// `text` cut to at most `max_bytes` for a message, never inside a UTF-8 sequence, with the full
// size said when cut: names and values from a hostile file can be megabytes long.
std::string clip_for_message(std::string_view text, size_t max_bytes = 200);

}  // namespace fg
