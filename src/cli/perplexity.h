// cli/perplexity.h — the arithmetic of `fullgraph perplexity`, apart from the engine that supplies
// the logprobs: how a token stream is cut into chunks, which positions of a chunk are scored, and
// the final estimate. The definitions are llama.cpp's llama-perplexity (examples/perplexity):
//   - n_chunks = floor(n_tokens / N) for a context of N tokens (optionally only the first K);
//     chunk i is tokens [i*N, (i+1)*N), each an independent sequence from position 0, whose first
//     token becomes BOS when the tokenizer adds one;
//   - in a chunk, position j in [N/2, N-1) predicts token j+1 given tokens 0..j: the first N/2
//     tokens are context only, so every scored token sees at least N/2 tokens before it;
//   - PPL = exp(mean NLL over every scored token of every chunk).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fg::cli {

struct PerplexityPlan {
  int64_t context = 0;   // N: tokens per chunk
  int64_t n_chunks = 0;  // chunks evaluated
  int64_t first = 0;     // N/2: the first scored position of a chunk (predicting token first+1)
  int64_t scored_per_chunk() const { return context - 1 - first; }
};

// The chunking of `n_tokens` tokens with a context of `context`; `max_chunks` > 0 keeps only the
// first that many. Throws fg::Error naming the counts when the context is below 2 (nothing to
// score) or the input holds fewer than 2 * context tokens (llama-perplexity's minimum). How long a
// context the model can take is the caller's check.
PerplexityPlan plan_perplexity(int64_t n_tokens, int64_t context, int64_t max_chunks);

// Chunk `i`'s tokens, its first token replaced by `bos` when given.
std::vector<int32_t> chunk_tokens(std::span<const int32_t> tokens, const PerplexityPlan& plan, int64_t i,
                                  std::optional<int32_t> bos);

// One chunk's scored tokens: the sum of their NLLs and of their squares (for the error estimate).
struct ChunkScore {
  double nll_sum = 0.0;
  double nll_sq_sum = 0.0;
  int64_t n_scored = 0;
};

// `prompt_logprobs[j]` is the logprob of chunk token j+1 given tokens 0..j (N-1 entries, as the
// engine's prompt logprobs are); sums -logprob over j in [first, N-1), in double.
ChunkScore score_chunk(std::span<const float> prompt_logprobs, const PerplexityPlan& plan);

struct PerplexityEstimate {
  double ppl = 0.0;
  double ppl_error = 0.0;  // llama-perplexity's "+/-"
  double nll_mean = 0.0;
  int64_t n_scored = 0;
};

// The estimate over `chunks`. The error is llama-perplexity's: the standard error of the mean
// NLL, sqrt((E[nll^2] - E[nll]^2) / (n - 1)) over the n scored tokens, carried through exp to
// first order (d ppl = ppl * d nll); 0 when n < 2 or the variance rounds to 0 or below.
PerplexityEstimate estimate_perplexity(std::span<const ChunkScore> chunks);

// Token ids separated by commas and/or whitespace ("1, 2 3\n4"); `source` names the input in
// errors, which name the offending item and its place.
std::vector<int32_t> parse_token_id_list(const std::string& text, const std::string& source);

}  // namespace fg::cli
