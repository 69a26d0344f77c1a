// tokenizer/normalizers.h — the "normalizer" of tokenizer.json: text rewrites applied to each
// stretch of input between added tokens, before pre-tokenization. Supported: NFC,
// NFD (utf8proc), Prepend, Replace, and Sequence of those (flattened into one list of steps).
#pragma once

#include <string>
#include <vector>

#include "tokenizer/pattern.h"

namespace fg {

class JsonView;

class Normalizer {
 public:
  // A null node is the identity.
  static Normalizer from_json(const JsonView& node);

  bool is_identity() const { return steps_.empty(); }
  // Rewrites `text` (valid UTF-8) in place.
  void normalize(std::string& text) const;

 private:
  enum class Kind { kNfc, kNfd, kPrepend, kReplace };
  struct Step {
    Kind kind;
    std::string text;  // what Prepend prepends, or what Replace puts in place of each match
    Pattern pattern = Pattern::literal("");
  };
  void add_from_json(const JsonView& node);

  std::vector<Step> steps_;
};

}  // namespace fg
