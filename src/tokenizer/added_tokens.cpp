// tokenizer/added_tokens.cpp — loading added tokens and finding them in text (see added_tokens.h).
#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "core/error.h"
#include "core/json/json_view.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/utf8.h"

namespace fg {

void AddedVocabulary::Trie::insert(std::string_view key, int32_t token_index) {
  if (build_.empty()) build_.emplace_back();
  int32_t node = 0;
  for (char c : key) {
    const auto b = static_cast<uint8_t>(c);
    auto& children = build_[node].children;
    const auto it = std::find_if(children.begin(), children.end(), [&](const auto& e) { return e.first == b; });
    if (it != children.end()) {
      node = it->second;
    } else {
      const auto child = static_cast<int32_t>(build_.size());
      children.emplace_back(b, child);  // may reallocate build_ below: take no references across this
      build_.emplace_back();
      node = child;
    }
  }
  // Hugging Face's matcher prefers the pattern given first among equal spellings.
  if (build_[node].token < 0) build_[node].token = token_index;
  first_[static_cast<uint8_t>(key[0])] = true;
  any_ = true;
}

void AddedVocabulary::Trie::finalize() {
  nodes_.assign(build_.size(), Node{});
  edges_.clear();
  for (size_t i = 0; i < build_.size(); ++i) {
    auto& children = build_[i].children;
    std::sort(children.begin(), children.end());
    nodes_[i] = Node{build_[i].token, static_cast<uint32_t>(edges_.size()), static_cast<uint32_t>(children.size())};
    edges_.insert(edges_.end(), children.begin(), children.end());
  }
  build_.clear();
  build_.shrink_to_fit();
}

std::pair<int32_t, size_t> AddedVocabulary::Trie::longest_at(std::string_view text, size_t pos) const {
  std::pair<int32_t, size_t> best{-1, 0};
  uint32_t node = 0;
  for (size_t k = pos; k < text.size(); ++k) {
    const Node& n = nodes_[node];
    const auto begin = edges_.begin() + n.first_edge, end = begin + n.edge_count;
    const auto b = static_cast<uint8_t>(text[k]);
    const auto it = std::lower_bound(begin, end, b, [](const auto& e, uint8_t v) { return e.first < v; });
    if (it == end || it->first != b) break;
    node = static_cast<uint32_t>(it->second);
    if (nodes_[node].token >= 0) best = {nodes_[node].token, k - pos + 1};
  }
  return best;
}

AddedVocabulary AddedVocabulary::from_json(const JsonView& node, const BpeModel& model, const Normalizer& normalizer) {
  AddedVocabulary v;
  const int32_t base = model.vocab_size();
  int32_t next_new = base;
  const auto owner_of = [&](int64_t id) -> int32_t {
    for (size_t i = 0; i < v.tokens_.size(); ++i)
      if (v.tokens_[i].id == id) return static_cast<int32_t>(i);
    return -1;
  };
  for (size_t i = 0; i < node.size(); ++i) {
    const JsonView entry = node.item(i);
    entry.allow_only({"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    AddedToken t;
    t.content = entry["content"].as_string();
    const int64_t id = entry["id"].as_int();
    t.special = entry["special"].as_bool();
    t.single_word = entry["single_word"].as_bool();
    t.lstrip = entry["lstrip"].as_bool();
    t.rstrip = entry["rstrip"].as_bool();
    t.normalized = entry["normalized"].as_bool();
    if (t.content.empty()) entry["content"].fail("an added token cannot be empty");
    if (v.find(t.content) >= 0) entry["content"].fail("the added token \"{}\" is listed twice", t.content);
    const int32_t model_id = model.token_to_id(t.content);
    const int64_t expected = model_id >= 0 ? model_id : next_new;
    if (id != expected) {
      const JsonView where = entry["id"];
      if (const int32_t other = owner_of(id); other >= 0)
        where.fail("the added tokens \"{}\" and \"{}\" both have id {} (duplicate id)", v.tokens_[other].content,
                   t.content, id);
      if (model_id >= 0)
        where.fail("the added token \"{}\" is id {} in the model vocabulary, not {}", t.content, model_id, id);
      if (id >= 0 && id < base)
        where.fail("id {} of the added token \"{}\" belongs to the model token \"{}\" (duplicate id)", id, t.content,
                   model.id_to_token(static_cast<int32_t>(id)));
      where.fail("id {} of the added token \"{}\" is out of range: the next free id is {} (added ids must follow the "
                 "vocabulary without gaps)", id, t.content, expected);
    }
    t.id = static_cast<int32_t>(id);
    // Hugging Face keeps a normalized token in its normalized spelling, and decodes it that way.
    t.spelling = t.content;
    if (t.normalized) normalizer.normalize(t.spelling);
    if (model_id < 0) ++next_new;
    v.ids_by_content_.insert(t.content, t.id);
    if (t.special) v.special_contents_.insert(t.content, t.id);
    v.tokens_.push_back(std::move(t));
  }
  v.extra_ids_ = next_new - base;
  v.index_by_id_.assign(static_cast<size_t>(next_new), -1);
  for (size_t i = 0; i < v.tokens_.size(); ++i) v.index_by_id_[v.tokens_[i].id] = static_cast<int32_t>(i);

  // Hugging Face builds its matchers from the special tokens first, then the others.
  for (const bool special : {true, false}) {
    for (size_t i = 0; i < v.tokens_.size(); ++i) {
      const AddedToken& t = v.tokens_[i];
      if (t.special != special) continue;
      if (!t.normalized) {
        v.raw_.insert(t.content, static_cast<int32_t>(i));
        continue;
      }
      if (t.spelling.empty()) node.item(i).fail("the added token \"{}\" normalizes to the empty string", t.content);
      v.normalized_.insert(t.spelling, static_cast<int32_t>(i));
    }
  }
  v.raw_.finalize();
  v.normalized_.finalize();
  const bool any_single_word = std::any_of(v.tokens_.begin(), v.tokens_.end(), [](const auto& t) { return t.single_word; });
  // Rust's regex crate defines \w (what Hugging Face tests the neighbours with) this way.
  if (any_single_word) v.word_char_ = Pattern::builtin("[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]");
  return v;
}

const AddedToken* AddedVocabulary::by_id(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= index_by_id_.size() || index_by_id_[id] < 0) return nullptr;
  return &tokens_[index_by_id_[id]];
}

bool AddedVocabulary::is_word_char(uint32_t cp) const {
  std::string ch;
  utf8::append_code_point(ch, cp);
  std::vector<ByteSpan> matches;
  word_char_.find_all(ch, matches);
  return !matches.empty();
}

void AddedVocabulary::split(std::string_view text, bool normalized_text, std::vector<Segment>& out) const {
  if (text.empty()) return;
  const Trie& trie = normalized_text ? normalized_ : raw_;
  if (!trie.has_tokens()) {
    out.push_back({0, text.size(), -1});
    return;
  }
  size_t start_offset = 0, pos = 0;
  while (pos < text.size()) {
    if (!trie.may_start(static_cast<uint8_t>(text[pos]))) {
      ++pos;
      continue;
    }
    const auto [index, length] = trie.longest_at(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + length;
    pos = stop;  // matches never overlap, whatever the checks below decide
    const AddedToken& t = tokens_[index];
    if (t.single_word) {
      size_t b = 0;
      const bool word_before = start > 0 && is_word_char(utf8::previous_code_point(text, start, b));
      size_t after = stop;
      const bool word_after = stop < text.size() && is_word_char(utf8::next_code_point(text, after));
      if (word_before || word_after) continue;
    }
    if (t.lstrip) {
      size_t new_start = start;
      while (new_start > 0) {
        size_t b = 0;
        if (!utf8::is_white_space(utf8::previous_code_point(text, new_start, b))) break;
        new_start = b;
      }
      start = std::max(new_start, start_offset);
    }
    if (t.rstrip) {
      while (stop < text.size()) {
        size_t next = stop;
        if (!utf8::is_white_space(utf8::next_code_point(text, next))) break;
        stop = next;
      }
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, t.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
}

}  // namespace fg
