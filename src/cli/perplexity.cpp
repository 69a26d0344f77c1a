// cli/perplexity.cpp — see perplexity.h.
#include "cli/perplexity.h"

#include <cctype>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace fg::cli {

PerplexityPlan plan_perplexity(int64_t n_tokens, int64_t context, int64_t max_chunks) {
  FG_CHECK(context >= 2, "--context {}: a chunk needs at least 2 tokens (one to predict from, one to score)", context);
  FG_CHECK(n_tokens >= 2 * context,
           "the input holds {} tokens, fewer than the {} (2 x --context {}) that perplexity needs; give a longer text "
           "or a shorter --context",
           n_tokens, 2 * context, context);
  PerplexityPlan plan;
  plan.context = context;
  plan.n_chunks = n_tokens / context;
  if (max_chunks > 0 && max_chunks < plan.n_chunks) plan.n_chunks = max_chunks;
  plan.first = context / 2;
  return plan;
}

std::vector<int32_t> chunk_tokens(std::span<const int32_t> tokens, const PerplexityPlan& plan, int64_t i,
                                  std::optional<int32_t> bos) {
  FG_ASSERT(i >= 0 && i < plan.n_chunks && (i + 1) * plan.context <= static_cast<int64_t>(tokens.size()));
  const auto begin = tokens.begin() + i * plan.context;
  std::vector<int32_t> chunk(begin, begin + plan.context);
  if (bos) chunk[0] = *bos;
  return chunk;
}

ChunkScore score_chunk(std::span<const float> prompt_logprobs, const PerplexityPlan& plan) {
  FG_ASSERT(static_cast<int64_t>(prompt_logprobs.size()) == plan.context - 1);
  ChunkScore score;
  for (int64_t j = plan.first; j < plan.context - 1; ++j) {
    const double nll = -static_cast<double>(prompt_logprobs[static_cast<size_t>(j)]);
    score.nll_sum += nll;
    score.nll_sq_sum += nll * nll;
    ++score.n_scored;
  }
  return score;
}

PerplexityEstimate estimate_perplexity(std::span<const ChunkScore> chunks) {
  PerplexityEstimate e;
  double sum = 0.0, sq_sum = 0.0;
  for (const ChunkScore& c : chunks) {
    sum += c.nll_sum;
    sq_sum += c.nll_sq_sum;
    e.n_scored += c.n_scored;
  }
  if (e.n_scored == 0) {
    e.ppl = e.nll_mean = std::numeric_limits<double>::quiet_NaN();
    return e;
  }
  const double n = static_cast<double>(e.n_scored);
  e.nll_mean = sum / n;
  e.ppl = std::exp(e.nll_mean);
  // llama-perplexity's order of operations: the variance as E[x^2] - E[x]^2, which can round to
  // a small negative number when every NLL is (nearly) equal; that reads as no error.
  const double variance = sq_sum / n - e.nll_mean * e.nll_mean;
  if (e.n_scored >= 2 && variance > 0.0) e.ppl_error = e.ppl * std::sqrt(variance / (n - 1.0));
  return e;
}

std::vector<int32_t> parse_token_id_list(const std::string& text, const std::string& source) {
  std::vector<int32_t> ids;
  size_t i = 0;
  const auto separator = [&](size_t k) { return text[k] == ',' || std::isspace(static_cast<unsigned char>(text[k])); };
  while (i < text.size()) {
    if (separator(i)) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && !separator(end)) ++end;
    const std::string item = text.substr(i, end - i);
    bool ok = item.find_first_not_of("0123456789") == std::string::npos && item.size() <= 10;
    const long long value = ok ? std::stoll(item) : -1;
    ok = ok && value <= std::numeric_limits<int32_t>::max();
    FG_CHECK(ok, "{}: '{}' (item {}, at byte {}) is not a non-negative token id", source, item, ids.size(), i);
    ids.push_back(static_cast<int32_t>(value));
    i = end;
  }
  FG_CHECK(!ids.empty(), "{}: no token ids in it", source);
  return ids;
}

}  // namespace fg::cli
