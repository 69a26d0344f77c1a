// tokenizer/added_tokens.h — the "added_tokens" of tokenizer.json (special tokens such as <s> or
// <|im_start|>, and other tokens added after training): their ids, and finding them in text before
// the model runs, the way Hugging Face does it:
//  - tokens with normalized=false are matched in the raw text; those with normalized=true are
//    matched, in their normalized spelling, inside the normalized stretches between the former;
//  - matching is leftmost-longest and non-overlapping; a single_word match is dropped unless it
//    is bordered by non-word characters (Unicode \w) or the text's ends; lstrip/rstrip widen a
//    match over the white space to its left/right, which then never reaches the model.
//
// Ids are checked against the ids Hugging Face would assign (the model's id for a token already in
// the vocabulary, otherwise the next id after the vocabulary and the previous added tokens); where
// Hugging Face would only warn and renumber, fullgraph refuses the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/id_maps.h"
#include "tokenizer/pattern.h"

namespace fg {

class BpeModel;
class JsonView;
class Normalizer;

struct AddedToken {
  std::string content;
  std::string spelling;  // what decode() and id_to_token() use: the normalized content if normalized
  int32_t id = -1;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// A stretch of text to tokenize (id < 0) or an added token (id >= 0), as a byte range.
struct Segment {
  size_t begin;
  size_t end;
  int32_t id;
};

class AddedVocabulary {
 public:
  static AddedVocabulary from_json(const JsonView& node, const BpeModel& model, const Normalizer& normalizer);

  // Number of ids past the model's vocabulary.
  int32_t extra_ids() const { return extra_ids_; }
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // The added token with this id, or nullptr.
  const AddedToken* by_id(int32_t id) const;
  // The id of the added token with this content, or -1.
  int32_t find(std::string_view content) const { return ids_by_content_.find(content); }
  bool has_normalized_tokens() const { return normalized_.has_tokens(); }
  // Whether decode(skip_special_tokens=true) drops a token spelled `token`. Hugging Face tests the
  // spelling against the special tokens' contents, so a special token that is normalized to a
  // different spelling is kept, and a vocabulary token spelled like a special token is dropped.
  bool skipped_as_special(std::string_view token) const { return special_contents_.find(token) >= 0; }

  // Splits `text` into segments covering it (stripped spaces included in the token segments).
  // `normalized_text` selects the tokens matched after normalization.
  void split(std::string_view text, bool normalized_text, std::vector<Segment>& out) const;

 private:
  // A byte trie over token spellings for leftmost-longest matching.
  class Trie {
   public:
    void insert(std::string_view key, int32_t token_index);
    void finalize();
    bool has_tokens() const { return !nodes_.empty() && any_; }
    bool may_start(uint8_t b) const { return first_[b]; }
    // The token index and length of the longest key that starts at text[pos], or {-1, 0}.
    std::pair<int32_t, size_t> longest_at(std::string_view text, size_t pos) const;

   private:
    struct Node {
      int32_t token = -1;
      uint32_t first_edge = 0;
      uint32_t edge_count = 0;
    };
    struct BuildNode {
      int32_t token = -1;
      std::vector<std::pair<uint8_t, int32_t>> children;
    };
    std::vector<BuildNode> build_;
    std::vector<Node> nodes_;
    std::vector<std::pair<uint8_t, int32_t>> edges_;  // sorted by byte within each node
    bool first_[256] = {};
    bool any_ = false;
  };

  bool is_word_char(uint32_t cp) const;

  std::vector<AddedToken> tokens_;  // in file order
  std::vector<int32_t> index_by_id_;  // [vocabulary size] id → index in tokens_, or -1
  StringIdMap ids_by_content_;
  StringIdMap special_contents_;
  Trie raw_;
  Trie normalized_;
  int32_t extra_ids_ = 0;
  Pattern word_char_ = Pattern::literal("");  // compiled only when a token is single_word
};

}  // namespace fg
