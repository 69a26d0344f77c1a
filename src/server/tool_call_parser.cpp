// server/tool_call_parser.cpp — see tool_call_parser.h. One state machine reads every format; the
// non-streamed parse is the stream fed the whole text, so the two agree by construction.
#include "server/tool_call_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <random>

#include "core/error.h"
#include "server/tool_call_json.h"

namespace fg::server {

namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kBlockOpen = "<tool_call>";
constexpr std::string_view kBlockClose = "</tool_call>";
constexpr std::array<std::string_view, 2> kNames = {"hermes", "llama3_json"};

// A call's text is scanned again on every delta up to this size; past it, only once the text has
// grown by 1/32 since the last scan, so that a long call costs linear time, not quadratic.
constexpr size_t kRescanEveryDeltaBelow = 4096;
constexpr size_t kRescanGrowthDivisor = 32;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// The longest suffix of `text` that is a proper prefix of `tag`: bytes that may still become it.
size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

// How `text` at `at` stands against `tag`: all of it there, a proper prefix of it (more text may
// complete it), or neither.
enum class TagMatch { kWhole, kPrefix, kNo };
TagMatch match_tag(std::string_view text, size_t at, std::string_view tag) {
  const std::string_view rest = text.substr(at);
  if (rest.starts_with(tag)) return TagMatch::kWhole;
  return tag.starts_with(rest) ? TagMatch::kPrefix : TagMatch::kNo;
}

}  // namespace

std::span<const std::string_view> tool_call_parser_names() { return kNames; }

std::optional<ToolCallFormat> tool_call_parser_from_name(std::string_view name) {
  if (name == "llama3_json") return ToolCallFormat::kLlama3Json;
  if (name == "hermes") return ToolCallFormat::kHermes;
  return std::nullopt;
}

std::string make_tool_call_id() {
  std::random_device device;
  std::string id = "chatcmpl-tool-";
  for (int i = 0; i < 4; ++i) id += fmt::format("{:08x}", static_cast<uint32_t>(device()));
  return id;
}

ToolCallStream::ToolCallStream(ToolCallFormat format, ToolCallOptions options)
    : format_(format),
      options_(std::move(options)),
      state_(format == ToolCallFormat::kHermes ? State::kContent : State::kLead) {}

ToolStreamDelta ToolCallStream::feed(std::string_view text) {
  ToolStreamDelta out;
  text_.append(text);
  advance(out, /*at_end=*/false);
  return out;
}

ToolStreamDelta ToolCallStream::finish() {
  ToolStreamDelta out;
  advance(out, /*at_end=*/true);
  return out;
}

void ToolCallStream::advance(ToolStreamDelta& out, bool at_end) {
  while (step(out, at_end)) {
  }
}

void ToolCallStream::fail() {
  failed_ = true;
  state_ = State::kPassThrough;
}

bool ToolCallStream::open_call(std::string_view text, size_t at) {
  if (text[at] != '{') {
    fail();
    return true;
  }
  call_start_ = pos_ = at;
  state_ = State::kCall;
  scanned_size_ = 0;
  return true;
}

bool ToolCallStream::step(ToolStreamDelta& out, bool at_end) {
  const std::string_view text = text_;
  // The first byte that is not whitespace from pos_ on, or npos.
  const auto next_byte = [&]() {
    size_t at = pos_;
    while (at < text.size() && is_space(text[at])) ++at;
    return at < text.size() ? at : std::string_view::npos;
  };

  switch (state_) {
    case State::kPassThrough:
      out.content.append(text.substr(unsent_from_));
      unsent_from_ = pos_ = text.size();
      return false;

    case State::kContent: {  // hermes, before the first block
      const size_t open = text.find(kBlockOpen, pos_);
      if (open == std::string_view::npos) {
        const size_t keep = at_end ? 0 : partial_tag_suffix(text.substr(pos_), kBlockOpen);
        out.content.append(text.substr(unsent_from_, text.size() - keep - unsent_from_));
        unsent_from_ = pos_ = text.size() - keep;
        return false;
      }
      out.content.append(text.substr(unsent_from_, open - unsent_from_));
      unsent_from_ = open;  // the block's raw text, should it prove not to be a call
      pos_ = open + kBlockOpen.size();
      state_ = State::kBlockLead;
      return true;
    }

    case State::kLead: {
      const size_t at = next_byte();
      if (at == std::string_view::npos) {
        if (at_end) fail();
        return at_end;
      }
      if (format_ == ToolCallFormat::kLlama3Json && text[at] == '<') {
        switch (match_tag(text, at, kPythonTag)) {
          case TagMatch::kWhole:
            pos_ = at + kPythonTag.size();
            return true;
          case TagMatch::kPrefix:
            if (at_end) fail();
            return at_end;
          case TagMatch::kNo:
            fail();
            return true;
        }
      }
      if (format_ == ToolCallFormat::kRequired) {
        if (text[at] != '[') {
          fail();
          return true;
        }
        pos_ = at + 1;
        state_ = State::kBetween;
        return true;
      }
      return open_call(text, at);
    }

    case State::kBlockLead: {  // hermes, after <tool_call>
      const size_t at = next_byte();
      if (at == std::string_view::npos) {
        if (at_end) fail();
        return at_end;
      }
      return open_call(text, at);
    }

    case State::kCall:
      return scan(out, at_end);

    case State::kAfterCall: {
      const size_t at = next_byte();
      if (at == std::string_view::npos) {
        // The end may come here, except inside required's array.
        if (at_end && format_ == ToolCallFormat::kRequired) fail();
        return at_end && failed_;
      }
      switch (format_) {
        case ToolCallFormat::kLlama3Json:
          if (text[at] != ';') break;
          pos_ = at + 1;
          state_ = State::kBetween;
          return true;
        case ToolCallFormat::kHermes:
          switch (match_tag(text, at, kBlockClose)) {
            case TagMatch::kWhole:
              unsent_from_ = pos_ = at + kBlockClose.size();
              state_ = State::kBetween;
              return true;
            case TagMatch::kPrefix:
              if (!at_end) return false;
              break;
            case TagMatch::kNo:
              break;
          }
          break;
        case ToolCallFormat::kRequired:
          if (text[at] == ',') {
            pos_ = at + 1;
            state_ = State::kBetween;
            return true;
          }
          if (text[at] != ']') break;
          pos_ = at + 1;
          state_ = State::kDone;
          return true;
        case ToolCallFormat::kNamed:
          break;
      }
      fail();
      return true;
    }

    case State::kBetween: {
      if (format_ == ToolCallFormat::kHermes) {  // text outside blocks is dropped, as vLLM drops it
        const size_t open = text.find(kBlockOpen, pos_);
        if (open == std::string_view::npos) {
          unsent_from_ = pos_ = text.size() - (at_end ? 0 : partial_tag_suffix(text.substr(pos_), kBlockOpen));
          return false;
        }
        unsent_from_ = open;
        pos_ = open + kBlockOpen.size();
        state_ = State::kBlockLead;
        return true;
      }
      const size_t at = next_byte();
      if (at == std::string_view::npos) {
        // llama3_json may end after a ';'; required's array may not end after '[' or ','.
        if (at_end && format_ == ToolCallFormat::kRequired) fail();
        return at_end && failed_;
      }
      return open_call(text, at);
    }

    case State::kDone: {
      const size_t at = next_byte();
      if (at == std::string_view::npos) return false;
      fail();
      return true;
    }
  }
  return false;
}

bool ToolCallStream::scan(ToolStreamDelta& out, bool at_end) {
  const size_t size = text_.size(), call_size = size - call_start_;
  if (!at_end) {
    if (size == scanned_size_) return false;
    if (call_size >= kRescanEveryDeltaBelow && (size - scanned_size_) * kRescanGrowthDivisor < call_size) return false;
  }
  scanned_size_ = size;
  const CallScan call = scan_call(std::string_view(text_).substr(call_start_),
                                  format_ == ToolCallFormat::kNamed ? CallShape::kArguments : CallShape::kCall);
  if (call.state == CallScan::State::kMalformed || (call.state == CallScan::State::kIncomplete && at_end)) {
    fail();
    return true;
  }
  const bool named = format_ == ToolCallFormat::kNamed;
  if (!call_open_sent_ && call.arguments_started && (named || call.name)) {
    ToolCallDelta open;
    open.index = calls_sent_;
    open.id = options_.make_id();
    open.name = named ? options_.function_name : *call.name;
    out.tool_calls.push_back(std::move(open));
    ++calls_sent_;
    call_open_sent_ = true;
  }
  if (call_open_sent_) {
    FG_ASSERT(call.arguments.size() >= arguments_sent_);
    if (call.arguments.size() > arguments_sent_) {
      const int index = calls_sent_ - 1;
      std::string piece = call.arguments.substr(arguments_sent_);
      arguments_sent_ = call.arguments.size();
      if (!out.tool_calls.empty() && out.tool_calls.back().index == index && !out.tool_calls.back().opens_call()) {
        out.tool_calls.back().arguments += piece;
      } else {
        ToolCallDelta delta;
        delta.index = index;
        delta.arguments = std::move(piece);
        out.tool_calls.push_back(std::move(delta));
      }
    }
  }
  if (call.state == CallScan::State::kIncomplete) return false;
  unsent_from_ = pos_ = call_start_ + call.end;
  call_open_sent_ = false;
  arguments_sent_ = 0;
  state_ = format_ == ToolCallFormat::kNamed ? State::kDone : State::kAfterCall;
  return true;
}

ToolCallParse parse_tool_calls(ToolCallFormat format, std::string_view text, const ToolCallOptions& options) {
  ToolCallStream stream(format, options);
  ToolStreamDelta all = stream.feed(text);
  ToolStreamDelta tail = stream.finish();
  ToolCallParse parse;
  if (stream.failed() || stream.calls_sent() == 0) {
    parse.content = std::string(text);
    return parse;
  }
  all.content += tail.content;
  for (ToolCallDelta& delta : all.tool_calls) {
    if (delta.opens_call()) parse.calls.push_back({std::move(delta.id), std::move(delta.name), ""});
    parse.calls.at(delta.index).arguments += delta.arguments;
  }
  for (ToolCallDelta& delta : tail.tool_calls) {
    if (delta.opens_call()) parse.calls.push_back({std::move(delta.id), std::move(delta.name), ""});
    parse.calls.at(delta.index).arguments += delta.arguments;
  }
  if (!all.content.empty()) parse.content = std::move(all.content);
  return parse;
}

}  // namespace fg::server
