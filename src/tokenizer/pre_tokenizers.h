// tokenizer/pre_tokenizers.h — the "pre_tokenizer" of tokenizer.json: cutting normalized text into
// the pieces the model tokenizes one at a time. Supported: Split (String or Regex pattern,
// behavior Isolated or Removed, not inverted), ByteLevel (add_prefix_space false; use_regex adds
// the GPT-2 split) as the last step, Sequence of those, and Metaspace (SentencePiece style:
// spaces become ▁, a ▁ is prepended per prepend_scheme, optionally split before each ▁) on its own.
//
// ByteLevel's character mapping is not applied here: the byte-level BPE model is built over raw
// bytes (see bpe_model.h), so a ByteLevel step only tells the model which alphabet it reads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pattern.h"

namespace fg {

class JsonView;

class PreTokenizer {
 public:
  // A null node keeps each normalized stretch as one piece.
  static PreTokenizer from_json(const JsonView& node);

  // True when the last step is ByteLevel: the model must read raw bytes.
  bool byte_level() const { return byte_level_; }

  // Appends the non-empty pieces of `text` to `out`, as byte ranges of the returned text: `text`
  // itself, or `buffer` holding Metaspace's rewrite of it. `at_text_start` tells whether `text`
  // begins the whole input (Metaspace's prepend_scheme "first").
  std::string_view split(std::string_view text, bool at_text_start, std::string& buffer,
                         std::vector<ByteSpan>& out) const;

 private:
  enum class Prepend { kAlways, kFirst, kNever };
  struct Metaspace {
    std::string replacement;
    Prepend prepend = Prepend::kAlways;
    bool split = true;
  };
  enum class Behavior { kIsolated, kRemoved };
  struct Step {
    Pattern pattern;
    Behavior behavior;
  };
  void add_from_json(const JsonView& node);
  void split_step(const Step& step, std::string_view text, ByteSpan piece, std::vector<ByteSpan>& out,
                  std::vector<ByteSpan>& matches) const;

  std::string_view metaspace(std::string_view text, bool at_text_start, std::string& buffer,
                             std::vector<ByteSpan>& out) const;

  std::vector<Step> steps_;
  bool byte_level_ = false;
  std::optional<Metaspace> metaspace_;  // when set, the only step
};

}  // namespace fg
