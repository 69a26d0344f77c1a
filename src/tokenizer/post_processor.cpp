// tokenizer/post_processor.cpp — parsing and applying post-processors (see post_processor.h).
#include "tokenizer/post_processor.h"

#include <map>
#include <string>

#include "core/error.h"
#include "core/json/json_view.h"

namespace fg {

namespace {

using SpecialTokens = std::map<std::string, std::vector<int32_t>, std::less<>>;

SpecialTokens parse_special_tokens(const JsonView& node, const std::function<int32_t(std::string_view)>& token_to_id,
                                   int32_t vocab_size) {
  node.require_object();
  SpecialTokens out;
  for (const auto& [key, value] : node.raw().items()) {
    const JsonView entry(value, node.source(), node.path() + "." + key);
    entry.allow_only({"id", "ids", "tokens"});
    if (entry["id"].as_string() != key) entry["id"].fail("does not match its key \"{}\"", key);
    const JsonView ids = entry["ids"], tokens = entry["tokens"];
    if (ids.size() != tokens.size()) entry.fail("\"ids\" and \"tokens\" have different lengths");
    std::vector<int32_t> resolved;
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t id = ids.item(i).as_int();
      if (id < 0 || id >= vocab_size)
        ids.item(i).fail("the id {} is out of range: the vocabulary has {} ids", id, vocab_size);
      const std::string& token = tokens.item(i).as_string();
      if (token_to_id(token) != id)
        tokens.item(i).fail("the token \"{}\" does not have id {} in the vocabulary", token, id);
      resolved.push_back(static_cast<int32_t>(id));
    }
    out.emplace(key, std::move(resolved));
  }
  return out;
}

}  // namespace

PostProcessor PostProcessor::from_json(const JsonView& node, const std::function<int32_t(std::string_view)>& token_to_id,
                                       int32_t vocab_size) {
  PostProcessor p;
  if (!node.is_null()) p.add_from_json(node, token_to_id, vocab_size);
  return p;
}

void PostProcessor::add_from_json(const JsonView& node, const std::function<int32_t(std::string_view)>& token_to_id,
                                  int32_t vocab_size) {
  const std::string& type = node["type"].as_string();
  if (type == "Sequence") {
    node.allow_only({"type", "processors"});
    const JsonView list = node["processors"];
    for (size_t i = 0; i < list.size(); ++i) add_from_json(list.item(i), token_to_id, vocab_size);
  } else if (type == "ByteLevel") {
    node.allow_only({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    for (const char* key : {"add_prefix_space", "trim_offsets", "use_regex"})
      if (auto v = node.get(key)) v->as_bool();  // these only move offsets, which fullgraph does not report
  } else if (type == "TemplateProcessing") {
    node.allow_only({"type", "single", "pair", "special_tokens"});
    const SpecialTokens specials = parse_special_tokens(node["special_tokens"], token_to_id, vocab_size);
    const auto parse_template = [&](const JsonView& list, bool pair) {
      std::vector<Piece> pieces;
      for (size_t i = 0; i < list.size(); ++i) {
        const JsonView piece = list.item(i);
        piece.allow_only({"SpecialToken", "Sequence"});
        if (piece.raw().size() != 1) piece.fail("expected exactly one of \"SpecialToken\" or \"Sequence\"");
        if (auto seq = piece.get("Sequence")) {
          seq->allow_only({"id", "type_id"});
          const std::string& id = (*seq)["id"].as_string();
          (*seq)["type_id"].as_int();
          if (id != "A" && !(pair && id == "B"))
            (*seq)["id"].fail("the sequence \"{}\" is not valid here (expected A{})", id, pair ? " or B" : "");
          pieces.push_back(Piece{true, {}});
        } else {
          const JsonView special = piece["SpecialToken"];
          special.allow_only({"id", "type_id"});
          special["type_id"].as_int();
          const std::string& id = special["id"].as_string();
          const auto it = specials.find(id);
          if (it == specials.end()) special["id"].fail("the special token \"{}\" is not in special_tokens", id);
          pieces.push_back(Piece{false, it->second});
        }
      }
      return pieces;
    };
    parse_template(node["pair"], true);
    templates_.push_back(parse_template(node["single"], false));
  } else {
    node["type"].fail("the post-processor type \"{}\" is not supported (supported: TemplateProcessing, ByteLevel, "
                      "Sequence)", type);
  }
}

void PostProcessor::apply(std::vector<int32_t>& ids) const {
  for (const auto& pieces : templates_) {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const Piece& piece : pieces) {
      if (piece.is_sequence) out.insert(out.end(), ids.begin(), ids.end());
      else out.insert(out.end(), piece.ids.begin(), piece.ids.end());
    }
    ids = std::move(out);
  }
}

}  // namespace fg
