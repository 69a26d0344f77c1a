// tokenizer/bpe_model.h — the BPE "model" of tokenizer.json: vocabulary, merges, and the merge
// loop that turns one pre-token piece into token ids, with byte fallback, unk and ignore_merges
// behaving as in Hugging Face `tokenizers`.
//
// Two input alphabets: in byte-level mode (a ByteLevel pre-tokenizer feeds the model) pieces are
// raw bytes and the vocabulary is translated from the GPT-2 alphabet once at load, so encoding
// never spells bytes as characters; otherwise pieces are normalized text split into characters
// (SentencePiece style, where `<0xNN>` tokens spell bytes of characters missing from the vocab).
//
// Loading validates the vocabulary: ids are exactly 0..V-1 with no duplicates, merges name known
// tokens and produce known tokens, byte-fallback tokens are well-formed. Options fullgraph does not
// implement (dropout, subword prefixes/suffixes) are refused.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_cache.h"
#include "tokenizer/id_maps.h"

namespace fg {

class JsonView;

// Per-call working memory of the merge loop, reused across pieces of one encode() call.
struct BpeScratch {
  struct Symbol {
    int32_t id;
    int32_t prev;  // index of the previous live symbol, or -1
    int32_t next;  // index of the next live symbol, or -1
    bool alive;
  };
  struct Candidate {
    uint64_t order;  // merge rank << 32 | index of the left symbol: lower merges first
    int32_t left_id;
    int32_t right_id;
    int32_t new_id;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

class BpeModel {
 public:
  static BpeModel from_json(const JsonView& node, bool byte_level);

  int32_t vocab_size() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  // Lookups by the token's text as written in tokenizer.json.
  int32_t token_to_id(std::string_view token) const { return vocab_.find(token); }
  std::string_view id_to_token(int32_t id) const {
    return std::string_view(text_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  bool byte_level() const { return byte_level_; }
  bool byte_fallback() const { return byte_fallback_; }

  // Appends the ids of one piece (raw bytes in byte-level mode, else normalized text).
  void tokenize(std::string_view piece, std::vector<int32_t>& out, BpeScratch& scratch) const;

 private:
  void load_vocab(const JsonView& vocab);
  void load_merges(const JsonView& merges);
  void initial_symbols(std::string_view piece, BpeScratch& scratch) const;
  void merge(BpeScratch& scratch) const;

  std::string text_;               // all token texts, back to back, in id order
  std::vector<uint32_t> offsets_;  // [V+1] token id → start in text_
  StringIdMap vocab_;              // token text → id
  StringIdMap raw_vocab_;          // byte-level mode: the raw bytes a token spells → id
  PairMap merges_;
  std::array<int32_t, 256> byte_ids_{};      // byte-level: the token of each single byte, or -1
  std::array<int32_t, 256> fallback_ids_{};  // <0xNN> tokens, or -1
  std::array<int32_t, 128> ascii_ids_{};     // character mode: the token of each ASCII character, or -1
  int32_t unk_id_ = -1;
  bool byte_level_ = false;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::unique_ptr<BpeCache> cache_ = std::make_unique<BpeCache>();
};

}  // namespace fg
