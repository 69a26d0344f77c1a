// tokenizer/tokenizer_impl.h — the parts a loaded Tokenizer is made of (internal to tokenizer/).
#pragma once

#include <string>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoders.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/tokenizer.h"

namespace fg {

struct Tokenizer::Impl {
  std::string source;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  BpeModel model;
  AddedVocabulary added;
  PostProcessor post_processor;
  Decoder decoder;
};

}  // namespace fg
