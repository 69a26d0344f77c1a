// grammar/grammar_vocabulary.cpp — see grammar_vocabulary.h.
#include "grammar/grammar_vocabulary.h"

#include <algorithm>

#include "core/error.h"

namespace fg {

GrammarVocabulary grammar_vocabulary(const Tokenizer& tokenizer, int64_t model_vocab_size,
                                     std::span<const int32_t> eos_token_ids) {
  FG_CHECK(model_vocab_size > 0, "grammar vocabulary: the model's vocabulary size must be positive, got {}",
           model_vocab_size);
  FG_CHECK(!eos_token_ids.empty(),
           "grammar vocabulary: the model has no EOS token id, so no constrained output could ever end");
  GrammarVocabulary vocab;
  for (int32_t id : eos_token_ids) {
    FG_CHECK(id >= 0 && id < model_vocab_size, "grammar vocabulary: EOS token id {} is outside the model's "
             "vocabulary of {}", id, model_vocab_size);
    vocab.stop_token_ids.push_back(id);
  }
  std::sort(vocab.stop_token_ids.begin(), vocab.stop_token_ids.end());
  vocab.stop_token_ids.erase(std::unique(vocab.stop_token_ids.begin(), vocab.stop_token_ids.end()),
                             vocab.stop_token_ids.end());

  vocab.token_bytes.resize(static_cast<size_t>(model_vocab_size));
  const int64_t known = std::min(model_vocab_size, tokenizer.vocab_size());
  // A token's bytes in the middle of the text: no first-token rule, no final strip, the raw bytes.
  const DecodeScope mid_text{/*final_strip=*/false, /*starts_text=*/false, /*raw_bytes=*/true};
  for (int32_t id = 0; id < known; ++id) {
    if (tokenizer.is_special(id)) continue;
    const int32_t one[1] = {id};
    vocab.token_bytes[static_cast<size_t>(id)] = tokenizer.decode(one, /*skip_special_tokens=*/false, mid_text);
  }
  return vocab;
}

}  // namespace fg
