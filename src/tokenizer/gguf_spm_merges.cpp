// tokenizer/gguf_spm_merges.cpp — see gguf_spm_merges.h.
#include "tokenizer/gguf_spm_merges.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>


namespace fg {

namespace {

struct Candidate {
  int32_t left, right;  // ids of the pieces
  float score;          // of the merged token
  size_t left_chars, right_chars;
};

// Byte offsets of the code point boundaries inside `token` (valid UTF-8 is not required: a byte
// that does not start a sequence counts as one character, so a malformed token cannot loop).
std::vector<size_t> boundaries(std::string_view token) {
  std::vector<size_t> out;
  for (size_t i = 1; i < token.size(); ++i)
    if ((static_cast<uint8_t>(token[i]) & 0xC0) != 0x80) out.push_back(i);
  return out;
}

size_t chars(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> merges_from_scores(const std::vector<std::string>& tokens,
                                                                    const std::vector<float>& scores) {
  // As a Python dict built from (token, id) pairs: a repeated token keeps its last id and score
  // but its first position.
  std::unordered_map<std::string_view, int32_t> id_of;
  std::vector<int32_t> order;
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto [it, fresh] = id_of.try_emplace(tokens[i], static_cast<int32_t>(i));
    if (fresh) order.push_back(static_cast<int32_t>(i));
    else it->second = static_cast<int32_t>(i);
  }
  std::vector<Candidate> all, local;
  for (const int32_t first : order) {
    const std::string_view token = tokens[first];
    const int32_t id = id_of.at(token);
    local.clear();
    for (const size_t cut : boundaries(token)) {
      const auto l = id_of.find(token.substr(0, cut)), r = id_of.find(token.substr(cut));
      if (l == id_of.end() || r == id_of.end()) continue;
      local.push_back({l->second, r->second, scores[id], chars(l->first), chars(r->first)});
    }
    std::stable_sort(local.begin(), local.end(), [](const Candidate& a, const Candidate& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    all.insert(all.end(), local.begin(), local.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
    return a.right_chars > b.right_chars;
  });
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(all.size());
  for (const Candidate& c : all) merges.emplace_back(tokens[c.left], tokens[c.right]);
  return merges;
}

}  // namespace fg
