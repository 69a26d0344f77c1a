// server/reasoning_parser.cpp — see reasoning_parser.h.
#include "server/reasoning_parser.h"

#include <algorithm>
#include <array>

namespace fg::server {

namespace {

constexpr std::string_view kOpenTag = "<think>";
constexpr std::string_view kCloseTag = "</think>";
constexpr std::array<std::string_view, 2> kNames = {"deepseek_r1", "qwen3"};

// The longest suffix of `text` that is a proper prefix of `tag`: bytes that may still become it.
size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

std::span<const std::string_view> reasoning_parser_names() { return kNames; }

std::optional<ReasoningParserKind> reasoning_parser_from_name(std::string_view name) {
  if (name == "qwen3") return ReasoningParserKind::kQwen3;
  if (name == "deepseek_r1") return ReasoningParserKind::kDeepSeekR1;
  return std::nullopt;
}

std::string_view reasoning_parser_name(ReasoningParserKind kind) {
  return kind == ReasoningParserKind::kQwen3 ? "qwen3" : "deepseek_r1";
}

ReasoningStream::ReasoningStream(ReasoningParserKind kind, bool thinking_enabled)
    : state_(kind == ReasoningParserKind::kQwen3 && !thinking_enabled ? State::kContent : State::kOpening) {}

ReasoningDelta ReasoningStream::feed(std::string_view text) {
  ReasoningDelta out;
  held_.append(text);
  advance(out, /*at_end=*/false);
  return out;
}

ReasoningDelta ReasoningStream::finish() {
  ReasoningDelta out;
  advance(out, /*at_end=*/true);
  return out;
}

void ReasoningStream::advance(ReasoningDelta& out, bool at_end) {
  if (state_ == State::kOpening) {
    // Leading whitespace and a possible "<think>" wait until the first other byte decides.
    const size_t first = held_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
      if (!at_end) return;
    } else {
      const std::string_view rest = std::string_view(held_).substr(first);
      if (rest.starts_with(kOpenTag)) {
        held_.erase(0, first + kOpenTag.size());
      } else if (kOpenTag.starts_with(rest) && !at_end) {
        return;
      }
    }
    state_ = State::kReasoning;
  }
  if (state_ == State::kReasoning) {
    if (const size_t close = held_.find(kCloseTag); close != std::string::npos) {
      out.reasoning.append(held_, 0, close);
      out.content.append(held_, close + kCloseTag.size());
      held_.clear();
      state_ = State::kContent;
      return;
    }
    const size_t keep = at_end ? 0 : partial_tag_suffix(held_, kCloseTag);
    out.reasoning.append(held_, 0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return;
  }
  out.content.append(held_);
  held_.clear();
}

ReasoningSplit split_reasoning(ReasoningParserKind kind, std::string_view text, bool thinking_enabled) {
  if (kind == ReasoningParserKind::kQwen3 && !thinking_enabled) return {std::nullopt, std::string(text)};
  ReasoningStream stream(kind, thinking_enabled);
  ReasoningDelta all = stream.feed(text);
  const ReasoningDelta tail = stream.finish();
  all.reasoning += tail.reasoning;
  all.content += tail.content;
  ReasoningSplit split;
  if (kind == ReasoningParserKind::kDeepSeekR1 || !all.reasoning.empty()) split.reasoning = std::move(all.reasoning);
  if (!all.content.empty()) split.content = std::move(all.content);
  return split;
}

}  // namespace fg::server
