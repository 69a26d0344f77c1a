// tokenizer/post_processor.h — the "post_processor" of tokenizer.json, as it affects ids: what
// encode(add_special_tokens=true) adds around the tokens (BOS and the like). Supported:
// TemplateProcessing (its "single" template; "pair" is validated but fullgraph never encodes
// pairs), ByteLevel (offsets only: no effect on ids) and Sequence of those.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace fg {

class JsonView;

class PostProcessor {
 public:
  // A null node adds nothing. `token_to_id` resolves token texts (-1 when unknown) and `vocab_size`
  // bounds ids; both are used only to validate the special tokens the templates name.
  static PostProcessor from_json(const JsonView& node, const std::function<int32_t(std::string_view)>& token_to_id,
                                 int32_t vocab_size);

  // Applies the templates to the ids of one sequence (the add_special_tokens=true path).
  void apply(std::vector<int32_t>& ids) const;

 private:
  struct Piece {
    bool is_sequence;            // the input sequence itself ("A")
    std::vector<int32_t> ids;    // otherwise: the ids of a special token
  };
  void add_from_json(const JsonView& node, const std::function<int32_t(std::string_view)>& token_to_id,
                     int32_t vocab_size);

  std::vector<std::vector<Piece>> templates_;  // one "single" template per TemplateProcessing, in order
};

}  // namespace fg
