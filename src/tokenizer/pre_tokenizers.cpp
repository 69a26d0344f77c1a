// tokenizer/pre_tokenizers.cpp — parsing and applying pre-tokenizers (see pre_tokenizers.h).
#include "tokenizer/pre_tokenizers.h"

#include "core/error.h"
#include "core/json/json_view.h"
#include "tokenizer/utf8.h"

namespace fg {

namespace {

// What ByteLevel(use_regex=true) splits with before mapping bytes (GPT-2's pattern).
constexpr std::string_view kGpt2Split =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

}  // namespace

PreTokenizer PreTokenizer::from_json(const JsonView& node) {
  PreTokenizer p;
  if (!node.is_null()) p.add_from_json(node);
  return p;
}

void PreTokenizer::add_from_json(const JsonView& node) {
  const std::string& type = node["type"].as_string();
  if (byte_level_) node.fail("a pre-tokenizer after ByteLevel is not supported (ByteLevel must come last)");
  if (metaspace_) node.fail("a pre-tokenizer after Metaspace is not supported (Metaspace must be alone)");
  if (type == "Sequence") {
    node.allow_only({"type", "pretokenizers"});
    const JsonView list = node["pretokenizers"];
    for (size_t i = 0; i < list.size(); ++i) {
      if (byte_level_) list.item(i).fail("a pre-tokenizer after ByteLevel is not supported (ByteLevel must come last)");
      add_from_json(list.item(i));
    }
  } else if (type == "Metaspace") {
    node.allow_only({"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
    if (!steps_.empty()) node.fail("Metaspace after other pre-tokenizers is not supported (it must be alone)");
    Metaspace m;
    m.replacement = node["replacement"].as_string();
    size_t end = 0;
    if (m.replacement.empty() || (utf8::next_code_point(m.replacement, end), end != m.replacement.size()))
      node["replacement"].fail("must be exactly one character");
    if (auto legacy = node.get("add_prefix_space")) m.prepend = legacy->as_bool() ? Prepend::kAlways : Prepend::kNever;
    if (auto scheme = node.get("prepend_scheme")) {
      const std::string& v = scheme->as_string();
      if (v == "always") m.prepend = Prepend::kAlways;
      else if (v == "first") m.prepend = Prepend::kFirst;
      else if (v == "never") m.prepend = Prepend::kNever;
      else scheme->fail("the prepend_scheme \"{}\" is not supported (supported: always, first, never)", v);
    }
    if (auto split = node.get("split")) m.split = split->as_bool();
    if (auto rep = node.get("str_rep")) rep->as_string();  // a legacy copy of replacement
    metaspace_ = std::move(m);
  } else if (type == "Split") {
    node.allow_only({"type", "pattern", "behavior", "invert"});
    if (auto invert = node.get("invert"); invert && invert->as_bool()) invert->fail("invert: true is not supported");
    const JsonView behavior = node["behavior"];
    const std::string& b = behavior.as_string();
    Behavior kind = Behavior::kIsolated;
    if (b == "Removed") kind = Behavior::kRemoved;
    else if (b != "Isolated")
      behavior.fail("the split behavior \"{}\" is not supported (supported: Isolated, Removed)", b);
    steps_.push_back(Step{Pattern::from_json(node["pattern"]), kind});
  } else if (type == "ByteLevel") {
    node.allow_only({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    if (auto aps = node.get("add_prefix_space"); aps && aps->as_bool())
      aps->fail("add_prefix_space: true is not supported");
    if (auto trim = node.get("trim_offsets")) trim->as_bool();  // offsets only: no effect on ids
    const auto use_regex = node.get("use_regex");
    if (!use_regex || use_regex->as_bool()) steps_.push_back(Step{Pattern::regex(kGpt2Split, node), Behavior::kIsolated});
    byte_level_ = true;
  } else {
    node["type"].fail("the pre-tokenizer type \"{}\" is not supported (supported: ByteLevel, Metaspace, Split, "
                      "Sequence)", type);
  }
}

void PreTokenizer::split_step(const Step& step, std::string_view text, ByteSpan piece, std::vector<ByteSpan>& out,
                              std::vector<ByteSpan>& matches) const {
  matches.clear();
  step.pattern.find_all(text.substr(piece.begin, piece.end - piece.begin), matches);
  size_t last = piece.begin;
  for (const ByteSpan& m : matches) {
    const size_t begin = piece.begin + m.begin, end = piece.begin + m.end;
    if (begin > last) out.push_back({last, begin});
    if (step.behavior == Behavior::kIsolated) out.push_back({begin, end});
    last = end;
  }
  if (piece.end > last) out.push_back({last, piece.end});
}

std::string_view PreTokenizer::metaspace(std::string_view text, bool at_text_start, std::string& buffer,
                                         std::vector<ByteSpan>& out) const {
  const Metaspace& m = *metaspace_;
  buffer.clear();
  const bool starts = text.substr(0, 1) == " " || text.substr(0, m.replacement.size()) == m.replacement;
  if (!starts && (m.prepend == Prepend::kAlways || (m.prepend == Prepend::kFirst && at_text_start)))
    buffer += m.replacement;
  for (char c : text) {
    if (c == ' ') buffer += m.replacement;
    else buffer.push_back(c);
  }
  if (!m.split) {
    out.push_back({0, buffer.size()});
    return buffer;
  }
  // Each ▁ starts a piece (Hugging Face's MergedWithNext).
  size_t start = 0;
  for (size_t pos = buffer.find(m.replacement, 1); pos != std::string::npos;
       pos = buffer.find(m.replacement, pos + m.replacement.size())) {
    out.push_back({start, pos});
    start = pos;
  }
  out.push_back({start, buffer.size()});
  return buffer;
}

std::string_view PreTokenizer::split(std::string_view text, bool at_text_start, std::string& buffer,
                                     std::vector<ByteSpan>& out) const {
  if (text.empty()) return text;
  if (metaspace_) return metaspace(text, at_text_start, buffer, out);
  if (steps_.empty()) {
    out.push_back({0, text.size()});
    return text;
  }
  std::vector<ByteSpan> matches;
  if (steps_.size() == 1) {
    split_step(steps_[0], text, {0, text.size()}, out, matches);
    return text;
  }
  std::vector<ByteSpan> current{{0, text.size()}}, next;
  for (const Step& step : steps_) {
    next.clear();
    for (const ByteSpan& piece : current) split_step(step, text, piece, next, matches);
    current.swap(next);
  }
  out.insert(out.end(), current.begin(), current.end());
  return text;
}

}  // namespace fg
