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

ojson LogprobFormatter::prompt_logprobs(std::span<const int32_t> prompt, std::span<const TokenLogprobs> scored) const {
  std::optional<TokenByteStream> bytes;  // each token alone: decoded_token is the token's own text
  if (tokenizer_ != nullptr) bytes.emplace(*tokenizer_);
  const auto entry = [&](int32_t id, float logprob, int64_t rank) {
    return ojson{{"logprob", json_logprob(logprob)},
                 {"rank", rank},
                 {"decoded_token", token_string(id, bytes ? bytes->bytes(id) : "")}};
  };
  ojson list = ojson::array();
  if (prompt.empty()) return list;
  list.push_back(nullptr);
  for (size_t i = 0; i < scored.size() && i + 1 < prompt.size(); ++i) {
    const int32_t id = prompt[i + 1];
    ojson dict = ojson::object();
    dict[std::to_string(id)] = entry(id, scored[i].logprob, scored[i].rank);
    for (size_t r = 0; r < scored[i].top.size(); ++r) {
      const auto& [top_id, value] = scored[i].top[r];
      if (top_id != id) dict[std::to_string(top_id)] = entry(top_id, value, static_cast<int64_t>(r + 1));
    }
    list.push_back(std::move(dict));
  }
  return list;
}

ojson LogprobFormatter::echoed_prompt(std::span<const int32_t> prompt, std::span<const TokenLogprobs> scored,
                                      Cursor& cursor) const {
  std::vector<OutputLogprobs> entries;
  for (size_t i = 0; i < prompt.size(); ++i) {
    OutputLogprobs e;
    e.token = prompt[i];
    e.in_text = tokenizer_ != nullptr && !tokenizer_->is_special(prompt[i]);
    if (i > 0 && i - 1 < scored.size()) e.logprobs = scored[i - 1];
    entries.push_back(std::move(e));
  }
  ojson out = completion(entries, cursor);
  if (!prompt.empty()) {
    out["token_logprobs"][0] = nullptr;
    out["top_logprobs"][0] = nullptr;
  }
  return out;
}

void LogprobFormatter::append_completion(ojson& into, const ojson& more) {
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
    for (const ojson& v : more.at(key)) into.at(key).push_back(v);
}

}  // namespace fg::server
