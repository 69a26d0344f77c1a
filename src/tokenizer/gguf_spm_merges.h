// tokenizer/gguf_spm_merges.h — BPE merges of a SentencePiece-style GGUF vocabulary that lists none.
//
// llama.cpp's SentencePiece tokenizer merges the adjacent pair whose merged token scores highest;
// a BPE model reaches the same result with merges ranked by that score. The ranking is the one
// Hugging Face builds for such vocabularies (transformers' generate_merges, used by its GGUF and
// SentencePiece converters), so that the same file gives the same merges here and there.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fg {

// Every split of every token (at code point boundaries) into two tokens of the vocabulary, best
// first: by the merged token's score, then the longer left piece, then the longer right piece;
// ties keep the order of the tokens and, within a token, of the pieces' ids. `scores` has one
// entry per token.
std::vector<std::pair<std::string, std::string>> merges_from_scores(const std::vector<std::string>& tokens,
                                                                    const std::vector<float>& scores);

}  // namespace fg
