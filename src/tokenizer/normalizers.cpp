// tokenizer/normalizers.cpp — parsing and applying normalizers (see normalizers.h).
//
// Each step has the semantics of its Hugging Face counterpart on the normalized string: Prepend
// does nothing to an empty string; Replace rewrites every non-overlapping match, left to right;
// NFC/NFD use utf8proc, adjusted to the (older) Unicode tables of Hugging Face's normalizer.
#include "tokenizer/normalizers.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "core/error.h"
#include "core/json/json_view.h"
#include "tokenizer/utf8.h"

namespace fg {

namespace {

bool is_ascii(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

// True when every character is in a block where NFC changes nothing, whatever the neighbours:
// no combining marks, no canonical decompositions, nothing that composes with a preceding
// character. (Checked for every code point of these ranges against Unicode's decomposition data.)
// Latin, Cyrillic, kana, CJK, Hangul syllables and emoji text thus skips the full normalizer.
bool nfc_unchanged(const std::string& s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const uint32_t cp = utf8::next_code_point(s, pos);
    const bool fine = cp < 0x300 || (cp >= 0x400 && cp <= 0x482) || (cp >= 0x48A && cp <= 0x4FF) ||
                      (cp >= 0x3040 && cp <= 0x3098) || (cp >= 0x309B && cp <= 0x30FF) ||
                      (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
                      (cp >= 0x1F000 && cp <= 0x1FAFF);
    if (!fine) return false;
  }
  return true;
}

std::string map_utf8proc(std::string_view text, utf8proc_option_t options) {
  if (text.empty()) return {};
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                                          static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  if (n < 0) fail("Unicode normalization failed: {}", utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
}

// NFC (compose) or NFD. Hugging Face's normalization tables predate Unicode 13, whose one new
// canonical decomposition is U+11938 = U+11935 U+11930; utf8proc knows it. To agree with Hugging
// Face, NFC never lets U+11930 (a starter) compose with what precedes it, and NFD leaves U+11938
// whole: the text is normalized in pieces cut at those characters.
void unicode_form(std::string& text, bool compose) {
  if (is_ascii(text) || (compose && nfc_unchanged(text))) return;  // both forms leave ASCII unchanged
  const utf8proc_option_t options = compose ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
  const std::string_view guard = compose ? "\xF0\x91\xA4\xB0" : "\xF0\x91\xA4\xB8";
  size_t pos = text.find(guard);
  if (pos == std::string::npos) {
    text = map_utf8proc(text, options);
    return;
  }
  std::string out;
  size_t start = 0;
  for (; pos != std::string::npos; pos = text.find(guard, pos + guard.size())) {
    out += map_utf8proc(std::string_view(text).substr(start, pos - start), options);
    if (compose) {
      start = pos;  // U+11930 opens the next piece
    } else {
      out += guard;  // U+11938 stays as it is
      start = pos + guard.size();
    }
  }
  out += map_utf8proc(std::string_view(text).substr(start), options);
  text = std::move(out);
}

}  // namespace

Normalizer Normalizer::from_json(const JsonView& node) {
  Normalizer n;
  if (!node.is_null()) n.add_from_json(node);
  return n;
}

void Normalizer::add_from_json(const JsonView& node) {
  const std::string& type = node["type"].as_string();
  if (type == "Sequence") {
    node.allow_only({"type", "normalizers"});
    const JsonView list = node["normalizers"];
    for (size_t i = 0; i < list.size(); ++i) add_from_json(list.item(i));
  } else if (type == "NFC" || type == "NFD") {
    node.allow_only({"type"});
    steps_.push_back(Step{type == "NFC" ? Kind::kNfc : Kind::kNfd, {}});
  } else if (type == "Prepend") {
    node.allow_only({"type", "prepend"});
    steps_.push_back(Step{Kind::kPrepend, node["prepend"].as_string()});
  } else if (type == "Replace") {
    node.allow_only({"type", "pattern", "content"});
    steps_.push_back(Step{Kind::kReplace, node["content"].as_string(), Pattern::from_json(node["pattern"])});
  } else {
    node["type"].fail("the normalizer type \"{}\" is not supported (supported: NFC, NFD, Prepend, Replace, "
                      "Sequence; NFKC/NFKD are refused because utf8proc's compatibility mappings are newer than "
                      "Hugging Face's)", type);
  }
}

void Normalizer::normalize(std::string& text) const {
  std::vector<ByteSpan> matches;
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kNfc: unicode_form(text, /*compose=*/true); break;
      case Kind::kNfd: unicode_form(text, /*compose=*/false); break;
      case Kind::kPrepend:
        if (!text.empty()) text.insert(0, step.text);
        break;
      case Kind::kReplace: {
        matches.clear();
        step.pattern.find_all(text, matches);
        if (matches.empty()) break;
        std::string out;
        out.reserve(text.size() + matches.size() * step.text.size());
        size_t last = 0;
        for (const ByteSpan& m : matches) {
          out.append(text, last, m.begin - last);
          out += step.text;
          last = m.end;
        }
        out.append(text, last, std::string::npos);
        text = std::move(out);
        break;
      }
    }
  }
}

}  // namespace fg
