// runner/input_check.cpp — every rule of the step format and of the padding contract, checked.
#include "runner/input_check.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "runner/step_builder.h"
#include "sampling/sampling_params.h"

namespace fg {

namespace {

template <typename T, typename U>
void expect_equal(const char* name, int64_t index, T value, U expected, const char* why) {
  FG_CHECK(value == static_cast<T>(expected), "checked mode: {}[{}] = {}, expected {} ({})", name, index, value,
           expected, why);
}

template <typename T>
void expect_range(const char* name, int64_t index, T value, int64_t low, int64_t high, const char* what) {
  FG_CHECK(value >= low && value < high, "checked mode: {}[{}] = {}, expected {} in [{}, {})", name, index, value, what,
           low, high);
}

// Real requests: monotonic offsets, lengths within bounds, blocks and slots in range.
void check_attention_rows(const StepLayout& layout, const void* base, const StepShape& shape,
                          const PaddingContract& contract, const InputCheckLimits& limits) {
  const int64_t B = layout.max_blocks_per_seq, bs = limits.block_size;
  const int32_t* input_ids = layout.at<int32_t>(base, StepField::kInputIds);
  const int32_t* positions = layout.at<int32_t>(base, StepField::kPositions);
  const int64_t* slots = layout.at<int64_t>(base, StepField::kSlotMapping);
  const int32_t* qsl = layout.at<int32_t>(base, StepField::kQueryStartLoc);
  const int32_t* seq_lens = layout.at<int32_t>(base, StepField::kSeqLens);
  const int32_t* logits_indices = layout.at<int32_t>(base, StepField::kLogitsIndices);
  const int32_t* table = layout.at<int32_t>(base, StepField::kBlockTable);
  expect_equal("query_start_loc", 0, qsl[0], 0, "offsets start at 0");
  int64_t first_query_len = -1;
  for (int64_t r = 0; r < shape.num_reqs; ++r) {
    const int64_t query_len = int64_t{qsl[r + 1]} - qsl[r];
    FG_CHECK(query_len >= 1, "checked mode: query_start_loc[{}] = {}, expected more than query_start_loc[{}] = {} "
             "(offsets must increase over real requests; each owns at least one token)", r + 1, qsl[r + 1], r, qsl[r]);
    if (first_query_len < 0) first_query_len = query_len;
    if (contract.requires_uniform_query_len || shape.uniform_decode)
      expect_equal("query_start_loc", r + 1, qsl[r + 1], qsl[r] + first_query_len,
                   "this batch must have one query length for every request");
    expect_range("seq_lens", r, seq_lens[r], query_len, limits.max_positions + 1,
                 "a context covering the request's query tokens and within the model's context");
    const int64_t blocks_used = (seq_lens[r] + bs - 1) / bs;
    FG_CHECK(blocks_used <= B, "checked mode: seq_lens[{}] = {} needs {} blocks, expected at most {} per row", r,
             seq_lens[r], blocks_used, B);
    for (int64_t b = 0; b < blocks_used; ++b)
      expect_range("block_table", r * B + b, table[r * B + b], 1, limits.num_blocks,
                   "a block id other than the null block 0");
    expect_equal("logits_indices", r, logits_indices[r], qsl[r + 1] - 1, "the request's last query token");
    for (int64_t t = qsl[r]; t < qsl[r + 1]; ++t) {
      const int64_t position = seq_lens[r] - query_len + (t - qsl[r]);
      expect_equal("positions", t, positions[t], position, "context length minus query tokens after it");
      const int64_t slot = int64_t{table[r * B + position / bs]} * bs + position % bs;
      expect_equal("slot_mapping", t, slots[t], slot, "the slot of the token's position through the block table");
      expect_range("input_ids", t, input_ids[t], 0, limits.vocab_size, "a token id");
    }
  }
  expect_equal("query_start_loc", shape.num_reqs, qsl[shape.num_reqs], shape.num_tokens, "the number of real tokens");
}

// Penalties and logprobs of the real rows, and their penalty lists (sampling_params.h, item 0).
void check_sampling_rows(const StepLayout& layout, const void* base, const StepShape& shape) {
  const int64_t num_reqs = shape.num_reqs;
  const float* repetition = layout.at<float>(base, sampling_step_field(&SamplingParams::repetition_penalty));
  const float* presence = layout.at<float>(base, sampling_step_field(&SamplingParams::presence_penalty));
  const float* frequency = layout.at<float>(base, sampling_step_field(&SamplingParams::frequency_penalty));
  const int32_t* num_logprobs = layout.at<int32_t>(base, sampling_step_field(&SamplingParams::num_logprobs));
  const int32_t* penalty_offsets = layout.at<int32_t>(base, StepField::kPenaltyOffsets);
  for (int64_t r = 0; r < num_reqs; ++r) {
    FG_CHECK(std::isfinite(repetition[r]) && repetition[r] > 0.0f,
             "checked mode: repetition_penalty[{}] = {}, expected a finite value > 0", r, repetition[r]);
    FG_CHECK(std::isfinite(presence[r]) && std::fabs(presence[r]) <= kMaxAbsPenalty,
             "checked mode: presence_penalty[{}] = {}, expected a value in [-{}, {}]", r, presence[r], kMaxAbsPenalty,
             kMaxAbsPenalty);
    FG_CHECK(std::isfinite(frequency[r]) && std::fabs(frequency[r]) <= kMaxAbsPenalty,
             "checked mode: frequency_penalty[{}] = {}, expected a value in [-{}, {}]", r, frequency[r],
             kMaxAbsPenalty, kMaxAbsPenalty);
    expect_range("num_logprobs", r, num_logprobs[r], -1, kMaxLogprobs + 1, "-1 (none) or a count of top logprobs");
  }
  expect_equal("penalty_offsets", 0, penalty_offsets[0], 0, "offsets start at 0");
  for (int64_t r = 0; r < num_reqs; ++r) {
    FG_CHECK(penalty_offsets[r + 1] >= penalty_offsets[r] && penalty_offsets[r + 1] <= layout.penalty_capacity,
             "checked mode: penalty_offsets[{}] = {}, expected a value in [penalty_offsets[{}] = {}, {}] (offsets "
             "never decrease and stay within max_penalty_entries)",
             r + 1, penalty_offsets[r + 1], r, penalty_offsets[r], layout.penalty_capacity);
    const bool penalized = repetition[r] != 1.0f || presence[r] != 0.0f || frequency[r] != 0.0f;
    if (!penalized)
      expect_equal("penalty_offsets", r + 1, penalty_offsets[r + 1], penalty_offsets[r],
                   "a request without penalties has an empty list");
  }
  // The logit-bias lists follow every penalty entry.
  const int32_t* bias_offsets = layout.at<int32_t>(base, StepField::kLogitBiasOffsets);
  expect_equal("logit_bias_offsets", 0, bias_offsets[0], penalty_offsets[num_reqs],
               "the logit-bias entries start after the penalty entries");
  for (int64_t r = 0; r < num_reqs; ++r)
    FG_CHECK(bias_offsets[r + 1] >= bias_offsets[r] && bias_offsets[r + 1] <= layout.penalty_capacity,
             "checked mode: logit_bias_offsets[{}] = {}, expected a value in [logit_bias_offsets[{}] = {}, {}] "
             "(offsets never decrease and stay within max_penalty_entries)",
             r + 1, bias_offsets[r + 1], r, bias_offsets[r], layout.penalty_capacity);
}

// A token-mask word that must hold `expected`, named by row and word.
void expect_mask_word(int64_t row, int64_t word, int32_t value, int32_t expected, const char* why) {
  FG_CHECK(value == expected, "checked mode: token_mask[{}][{}] = {:#010x}, expected {:#010x} ({})", row, word,
           static_cast<uint32_t>(value), static_cast<uint32_t>(expected), why);
}

// The padded region of every field, exactly as the step table declares (the token mask's padded
// rows when its mirror is given).
void check_padding(const StepLayout& layout, const void* base, const StepShape& shape,
                   const PaddingContract& contract, const int32_t* mask_mirror) {
  // The staging is only read here; the visitor takes it as writable memory.
  for_each_padded_field(
      layout, shape, contract, const_cast<void*>(base),
      [&layout](const StepFieldSpec& spec, const auto* data, int64_t real, int64_t all, auto expected) {
        for (int64_t e = real; e < all; ++e) {
          if (spec.extent == Extent::kMaskRows) {
            expect_mask_word(e / layout.mask_words, e % layout.mask_words, static_cast<int32_t>(data[e]),
                             static_cast<int32_t>(expected), spec.why_padded);
          } else {
            expect_equal(spec.name, e, data[e], expected, spec.why_padded);
          }
        }
      },
      const_cast<int32_t*>(mask_mirror));
}

// The token mask's real rows: all ones where the request is unconstrained; some token of the
// vocabulary allowed where it is (sampling_params.h, item 0: a mask allowing none is a bug of its
// maker, which the sampler would leave unmasked).
void check_token_mask_rows(const StepLayout& layout, const StepShape& shape, const TokenMaskCheck& mask,
                           const InputCheckLimits& limits) {
  const int64_t W = layout.mask_words;
  FG_CHECK(W == token_mask_words(limits.vocab_size) && static_cast<int64_t>(mask.constrained.size()) == shape.num_reqs,
           "checked mode: token_mask has {} words a row and {} flags, expected {} and {}", W, mask.constrained.size(),
           token_mask_words(limits.vocab_size), shape.num_reqs);
  for (int64_t r = 0; r < shape.num_reqs; ++r) {
    const int32_t* row = mask.mirror + r * W;
    if (!mask.constrained[static_cast<size_t>(r)]) {
      for (int64_t w = 0; w < W; ++w)
        expect_mask_word(r, w, row[w], -1, "an unconstrained request's row allows every token (all ones)");
      continue;
    }
    bool any = false;
    for (int64_t t = 0; t < limits.vocab_size && !any; ++t)
      any = (static_cast<uint32_t>(row[t >> 5]) >> (t & 31)) & 1u;
    FG_CHECK(any, "checked mode: token_mask[{}] allows no token of the vocabulary of {}, expected at least one (a "
             "grammar always allows its end token)", r, limits.vocab_size);
  }
}

// The penalty and logit-bias lists' entries: in-vocabulary tokens, listed once per row and list,
// with valid counts and biases.
void check_penalty_entries(const StepLayout& layout, const void* base, const StepShape& shape,
                           const InputCheckLimits& limits) {
  const int32_t* penalty_offsets = layout.at<int32_t>(base, StepField::kPenaltyOffsets);
  const int32_t* bias_offsets = layout.at<int32_t>(base, StepField::kLogitBiasOffsets);
  const int32_t* entries = layout.at<int32_t>(base, StepField::kPenaltyEntries);
  // [V] (only when some row has a list): the last (row, list) that listed each token.
  std::vector<int64_t> listed_in(bias_offsets[shape.num_reqs] > 0 ? static_cast<size_t>(limits.vocab_size) : 0, -1);
  for (int64_t r = 0; r < shape.num_reqs; ++r) {
    for (int64_t e = penalty_offsets[r]; e < penalty_offsets[r + 1]; ++e) {
      const int32_t token = entries[2 * e], count = entries[2 * e + 1];
      expect_range("penalty_entries.token", e, token, 0, limits.vocab_size, "a token id");
      expect_range("penalty_entries.count", e, count, 0, int64_t{1} << 31, "an output count");
      FG_CHECK(listed_in[token] != 2 * r, "checked mode: penalty_entries.token[{}] = {} is listed twice for request {}",
               e, token, r);
      listed_in[token] = 2 * r;
    }
    for (int64_t e = bias_offsets[r]; e < bias_offsets[r + 1]; ++e) {
      const int32_t token = entries[2 * e];
      const float bias = std::bit_cast<float>(entries[2 * e + 1]);
      expect_range("penalty_entries.token", e, token, 0, limits.vocab_size, "a token id of a logit bias");
      FG_CHECK(std::isfinite(bias) && std::fabs(bias) <= kMaxAbsLogitBias,
               "checked mode: penalty_entries.bias[{}] = {}, expected a logit bias in [-{}, {}]", e, bias,
               kMaxAbsLogitBias, kMaxAbsLogitBias);
      FG_CHECK(listed_in[token] != 2 * r + 1,
               "checked mode: penalty_entries.token[{}] = {} is biased twice for request {}", e, token, r);
      listed_in[token] = 2 * r + 1;
    }
  }
}

}  // namespace

void check_step_inputs(const StepLayout& layout, const void* base, int64_t num_tokens, int64_t num_reqs,
                       bool uniform_decode, const PaddingContract& contract, const InputCheckLimits& limits,
                       const TokenMaskCheck* mask) {
  FG_CHECK(num_tokens >= 1 && num_tokens <= layout.num_tokens && num_reqs >= 1 && num_reqs <= layout.num_reqs &&
               num_reqs <= num_tokens && layout.num_logits == layout.num_reqs,
           "checked mode: {} tokens over {} requests do not fit the padded shape ({}, {}) of a sampled step",
           num_tokens, num_reqs, layout.num_tokens, layout.num_reqs);
  const StepShape shape{num_tokens, num_reqs, num_reqs, uniform_decode};
  check_attention_rows(layout, base, shape, contract, limits);
  check_sampling_rows(layout, base, shape);
  check_padding(layout, base, shape, contract, mask != nullptr ? mask->mirror : nullptr);
  check_penalty_entries(layout, base, shape, limits);
  if (mask != nullptr) check_token_mask_rows(layout, shape, *mask, limits);
}

}  // namespace fg
