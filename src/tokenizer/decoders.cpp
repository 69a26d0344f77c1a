// tokenizer/decoders.cpp — parsing and applying decoders (see decoders.h).
#include "tokenizer/decoders.h"

#include <algorithm>

#include "core/error.h"
#include "core/json/json_view.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace fg {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void byte_level_step(std::vector<std::string>& tokens, bool raw_bytes) {
  std::string bytes;
  for (const std::string& t : tokens) {
    // A token outside the alphabet (an added token such as "日本") contributes its own bytes.
    if (auto raw = byte_level::unspell(t)) bytes += *raw;
    else bytes += t;
  }
  tokens.assign(1, raw_bytes ? std::move(bytes) : utf8::lossy(bytes));
}

void byte_fallback_step(std::vector<std::string>& tokens, bool raw_bytes) {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string run;  // bytes of consecutive <0xNN> tokens
  size_t run_tokens = 0;
  const auto flush = [&] {
    if (run_tokens == 0) return;
    if (raw_bytes || utf8::is_valid(run)) {
      out.push_back(run);
    } else {
      for (size_t i = 0; i < run_tokens; ++i) out.emplace_back(utf8::kReplacement);
    }
    run.clear();
    run_tokens = 0;
  };
  for (std::string& t : tokens) {
    uint8_t b = 0;
    if (Decoder::parse_byte_token(t, b)) {
      run.push_back(static_cast<char>(b));
      ++run_tokens;
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  tokens = std::move(out);
}

// Cuts up to `start` leading and `stop` trailing copies of the character `c` from each token.
void strip_step(std::vector<std::string>& tokens, std::string_view c, size_t start, size_t stop) {
  for (std::string& t : tokens) {
    size_t begin = 0;
    for (size_t i = 0; i < start && t.compare(begin, c.size(), c) == 0 && begin + c.size() <= t.size(); ++i)
      begin += c.size();
    size_t end = t.size();
    for (size_t i = 0; i < stop && end >= begin + c.size() && t.compare(end - c.size(), c.size(), c) == 0; ++i)
      end -= c.size();
    t = t.substr(begin, end - begin);
  }
}

// Metaspace: ▁ becomes a space, except in the first token of the text, where it is dropped.
void metaspace_step(std::vector<std::string>& tokens, const std::string& replacement, bool drop_first) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string& t = tokens[i];
    if (t.find(replacement) == std::string::npos) continue;
    std::string out;
    for (size_t pos = 0; pos < t.size();) {
      if (t.compare(pos, replacement.size(), replacement) == 0) {
        if (!(i == 0 && drop_first)) out.push_back(' ');
        pos += replacement.size();
      } else {
        out.push_back(t[pos++]);
      }
    }
    t = std::move(out);
  }
}

void replace_step(std::vector<std::string>& tokens, const Pattern& pattern, const std::string& content,
                  bool raw_bytes) {
  std::vector<ByteSpan> matches;
  for (std::string& t : tokens) {
    // Only raw bytes (DecodeScope::raw_bytes) can be invalid here; the pattern matcher needs text.
    if (raw_bytes && !utf8::is_valid(t)) continue;
    matches.clear();
    pattern.find_all(t, matches);
    if (matches.empty()) continue;
    std::string out;
    size_t last = 0;
    for (const ByteSpan& m : matches) {
      out.append(t, last, m.begin - last);
      out += content;
      last = m.end;
    }
    out.append(t, last, std::string::npos);
    t = std::move(out);
  }
}

}  // namespace

size_t StreamPlan::leading_strip(std::string_view piece, size_t& left) const {
  if (strip.empty()) return 0;
  // The whole text starts with the stream's first characters.
  size_t cut = 0;
  while (left > 0 && cut < piece.size()) {
    if (piece.compare(cut, strip.size(), strip) != 0) {
      left = 0;
      break;
    }
    cut += strip.size();
    --left;
  }
  if (cut > 0 && cut < piece.size()) left = 0;  // a character that is not `strip` follows
  return cut;
}

bool Decoder::parse_byte_token(std::string_view token, uint8_t& byte) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return false;
  if (token[3] == '+') {
    const int v = hex_value(token[4]);
    if (v < 0) return false;
    byte = static_cast<uint8_t>(v);
    return true;
  }
  const int hi = hex_value(token[3]), lo = hex_value(token[4]);
  if (hi < 0 || lo < 0) return false;
  byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

Decoder::Step Decoder::make_step(Kind kind) {
  Step step;
  step.kind = kind;
  return step;
}

Decoder Decoder::from_json(const JsonView& node) {
  Decoder d;
  if (node.is_null()) d.join_with_spaces_ = true;
  else d.add_from_json(node);
  d.plan_ = d.compute_stream_plan();
  return d;
}

void Decoder::add_from_json(const JsonView& node) {
  const std::string& type = node["type"].as_string();
  if (type == "Sequence") {
    node.allow_only({"type", "decoders"});
    const JsonView list = node["decoders"];
    for (size_t i = 0; i < list.size(); ++i) add_from_json(list.item(i));
  } else if (type == "ByteLevel") {
    node.allow_only({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    for (const char* key : {"add_prefix_space", "trim_offsets", "use_regex"})
      if (auto v = node.get(key)) v->as_bool();  // none of them changes what ByteLevel decodes to
    steps_.push_back(make_step(Kind::kByteLevel));
  } else if (type == "ByteFallback") {
    node.allow_only({"type"});
    steps_.push_back(make_step(Kind::kByteFallback));
  } else if (type == "Fuse") {
    node.allow_only({"type"});
    steps_.push_back(make_step(Kind::kFuse));
  } else if (type == "Strip") {
    node.allow_only({"type", "content", "start", "stop"});
    Step step = make_step(Kind::kStrip);
    const JsonView content = node["content"];
    step.content = content.as_string();
    size_t pos = 0;
    if (step.content.empty() || (utf8::next_code_point(step.content, pos), pos != step.content.size()))
      content.fail("Strip's content must be exactly one character");
    const int64_t start = node["start"].as_int(), stop = node["stop"].as_int();
    if (start < 0) node["start"].fail("must not be negative");
    if (stop < 0) node["stop"].fail("must not be negative");
    step.start = static_cast<size_t>(start);
    step.stop = static_cast<size_t>(stop);
    steps_.push_back(std::move(step));
  } else if (type == "Metaspace") {
    node.allow_only({"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
    Step step = make_step(Kind::kMetaspace);
    step.content = node["replacement"].as_string();
    size_t end = 0;
    if (step.content.empty() || (utf8::next_code_point(step.content, end), end != step.content.size()))
      node["replacement"].fail("must be exactly one character");
    step.drop_first = true;
    if (auto legacy = node.get("add_prefix_space")) step.drop_first = legacy->as_bool();
    if (auto scheme = node.get("prepend_scheme")) {
      const std::string& v = scheme->as_string();
      if (v != "always" && v != "first" && v != "never")
        scheme->fail("the prepend_scheme \"{}\" is not supported (supported: always, first, never)", v);
      step.drop_first = v != "never";
    }
    if (auto split = node.get("split")) split->as_bool();   // decoding does not split
    if (auto rep = node.get("str_rep")) rep->as_string();  // a legacy copy of replacement
    steps_.push_back(std::move(step));
  } else if (type == "Replace") {
    node.allow_only({"type", "pattern", "content"});
    Step step = make_step(Kind::kReplace);
    step.pattern = Pattern::from_json(node["pattern"]);
    step.content = node["content"].as_string();
    steps_.push_back(std::move(step));
  } else {
    node["type"].fail("the decoder type \"{}\" is not supported (supported: ByteLevel, ByteFallback, Fuse, Strip, "
                      "Replace, Metaspace, Sequence)", type);
  }
}

StreamPlan Decoder::compute_stream_plan() const {
  StreamPlan plan;
  if (join_with_spaces_) return plan;
  bool single = false;  // a Fuse or ByteLevel step has joined everything into one token
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    switch (step.kind) {
      case Kind::kFuse:
      case Kind::kByteLevel:
        single = true;
        break;
      case Kind::kReplace:
        // On the joined text a pattern could match across tokens, unless it is one character.
        if (single && !(step.pattern.is_literal() && utf8::valid_sequence_length(step.pattern.source(), 0) ==
                                                          step.pattern.source().size()))
          plan.by_window = false;
        break;
      case Kind::kByteFallback:
        if (single) plan.by_window = false;
        break;
      case Kind::kMetaspace:
        // Per token, its first-token rule given by DecodeScope::starts_text; on the joined text the
        // rule would cover everything.
        if (single && step.drop_first) plan.by_window = false;
        break;
      case Kind::kStrip:
        if (!single) break;  // per token
        if (i + 1 == steps_.size()) {
          plan.strip = step.content;
          plan.strip_start = step.start;
          plan.strip_stop = step.stop;
        } else {
          plan.by_window = false;
        }
        break;
    }
  }
  return plan;
}

std::string Decoder::decode(std::vector<std::string>& tokens, DecodeScope scope) const {
  std::string out;
  if (join_with_spaces_) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) out.push_back(' ');
      out += tokens[i];
    }
    return out;
  }
  const bool skip_last = !scope.final_strip && !plan_.strip.empty();
  for (size_t i = 0; i + (skip_last ? 1 : 0) < steps_.size(); ++i) {
    const Step& step = steps_[i];
    switch (step.kind) {
      case Kind::kByteLevel: byte_level_step(tokens, scope.raw_bytes); break;
      case Kind::kByteFallback: byte_fallback_step(tokens, scope.raw_bytes); break;
      case Kind::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case Kind::kStrip: strip_step(tokens, step.content, step.start, step.stop); break;
      case Kind::kReplace: replace_step(tokens, step.pattern, step.content, scope.raw_bytes); break;
      case Kind::kMetaspace: metaspace_step(tokens, step.content, step.drop_first && scope.starts_text); break;
    }
  }
  for (const std::string& t : tokens) out += t;
  return out;
}

bool Decoder::is_fallback_byte(std::string_view token) const {
  for (const Step& step : steps_) {
    if (step.kind == Kind::kByteFallback) {
      uint8_t b = 0;
      return parse_byte_token(token, b);
    }
    // Steps before ByteFallback that rewrite tokens could turn a token into, or out of, <0xNN>
    // form; the tokenizers fullgraph meets only put Replace(▁ → space) there, which cannot.
    if (step.kind == Kind::kByteLevel || step.kind == Kind::kFuse) return false;
  }
  return false;
}

}  // namespace fg
