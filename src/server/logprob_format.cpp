// server/logprob_format.cpp — see logprob_format.h.
#include "server/logprob_format.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>
#include <vector>

#include "core/utf8.h"

namespace fg::server {

namespace {

// "bytes:" + Python's repr of the bytes, without the b'' around it.
std::string escaped_bytes(std::string_view bytes) {
  std::string out = "bytes:";
  for (const unsigned char c : bytes) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c >= 0x20 && c < 0x7F) out.push_back(static_cast<char>(c));
    else out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

struct Alternative {
  int32_t id;
  std::string key;  // its token string
  float logprob;
};

// Completions' top_logprobs dict: every alternative under a key of its own (see the header).
ojson top_dict(int32_t sampled, const std::string& sampled_key, const std::vector<Alternative>& alternatives) {
  ojson dict = ojson::object();
  const auto taken = [&](const std::string& key, int32_t id) {
    return dict.contains(key) || (key == sampled_key && id != sampled);
  };
  for (const Alternative& a : alternatives) {
    std::string key = a.key;
    if (taken(key, a.id)) key = fmt::format("token_id:{}", a.id);
    for (int k = 2; taken(key, a.id); ++k) key = fmt::format("token_id:{}#{}", a.id, k);
    dict[key] = json_logprob(a.logprob);
  }
  return dict;
}

}  // namespace

double json_logprob(float logprob) {
  if (std::isnan(logprob) || logprob < -9999.0f) return -9999.0;
  return static_cast<double>(logprob);
}

LogprobFormatter::Cursor LogprobFormatter::start() const {
  Cursor cursor;
  if (tokenizer_ != nullptr) cursor.stream_.emplace(*tokenizer_);
  return cursor;
}

std::string LogprobFormatter::token_string(int32_t id, std::string_view bytes) const {
  if (options_.return_tokens_as_token_ids || tokenizer_ == nullptr) return fmt::format("token_id:{}", id);
  if (utf8::is_valid(bytes)) return std::string(bytes);
  return escaped_bytes(bytes);
}

ojson LogprobFormatter::bytes_json(std::string_view bytes) const {
  if (tokenizer_ == nullptr) return nullptr;
  ojson out = ojson::array();
  for (const unsigned char c : bytes) out.push_back(static_cast<int>(c));
  return out;
}

ojson LogprobFormatter::completion(std::span<const OutputLogprobs> entries, Cursor& cursor) const {
  ojson tokens = ojson::array(), values = ojson::array(), top = ojson::array(), offsets = ojson::array();
  std::vector<Alternative> alternatives;
  for (const OutputLogprobs& entry : entries) {
    // The alternatives stand where the sampled token stands: read them before moving past it.
    alternatives.clear();
    for (const auto& [id, value] : entry.logprobs.top)
      alternatives.push_back({id, token_string(id, cursor.stream_ ? cursor.stream_->bytes(id) : ""), value});
    const TokenPiece piece = cursor.stream_ ? cursor.stream_->push(entry.token, entry.in_text) : TokenPiece{};
    offsets.push_back(piece.offset);
    const std::string key = token_string(entry.token, piece.bytes);
    tokens.push_back(key);
    values.push_back(json_logprob(entry.logprobs.logprob));
    top.push_back(top_dict(entry.token, key, alternatives));
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", top}, {"text_offset", offsets}};
}

ojson LogprobFormatter::chat_content(std::span<const OutputLogprobs> entries, Cursor& cursor) const {
  ojson content = ojson::array();
  for (const OutputLogprobs& entry : entries) {
    ojson top = ojson::array();
    for (const auto& [id, value] : entry.logprobs.top) {
      const std::string bytes = cursor.stream_ ? cursor.stream_->bytes(id) : "";
      top.push_back(
          {{"token", token_string(id, bytes)}, {"logprob", json_logprob(value)}, {"bytes", bytes_json(bytes)}});
    }
    const TokenPiece piece = cursor.stream_ ? cursor.stream_->push(entry.token, entry.in_text) : TokenPiece{};
    content.push_back({{"token", token_string(entry.token, piece.bytes)},
                       {"logprob", json_logprob(entry.logprobs.logprob)},
                       {"bytes", bytes_json(piece.bytes)},
                       {"top_logprobs", std::move(top)}});
  }
  return content;
}

}  // namespace fg::server
