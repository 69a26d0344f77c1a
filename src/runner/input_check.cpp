// runner/input_check.cpp — every rule of the step format and of the padding contract, checked.
#include "runner/input_check.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "sampling/sampling_params.h"

namespace fg {

namespace {

template <typename T>
const T* field(const void* base, size_t offset) {
  return reinterpret_cast<const T*>(static_cast<const char*>(base) + offset);
}

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

}  // namespace

void check_step_inputs(const StepLayout& layout, const void* base, int64_t num_tokens, int64_t num_reqs,
                       bool uniform_decode, const PaddingContract& contract, const InputCheckLimits& limits) {
  const int64_t T = layout.num_tokens, R = layout.num_reqs, B = layout.max_blocks_per_seq, bs = limits.block_size;
  FG_CHECK(num_tokens >= 1 && num_tokens <= T && num_reqs >= 1 && num_reqs <= R && num_reqs <= num_tokens,
           "checked mode: {} tokens over {} requests do not fit the padded shape ({}, {})", num_tokens, num_reqs, T, R);
  const int32_t* input_ids = field<int32_t>(base, layout.input_ids);
  const int32_t* positions = field<int32_t>(base, layout.positions);
  const int64_t* slots = field<int64_t>(base, layout.slot_mapping);
  const int32_t* qsl = field<int32_t>(base, layout.query_start_loc);
  const int32_t* seq_lens = field<int32_t>(base, layout.seq_lens);
  const int32_t* logits_indices = field<int32_t>(base, layout.logits_indices);
  const float* temperature = field<float>(base, layout.temperature);
  const int32_t* top_k = field<int32_t>(base, layout.top_k);
  const float* top_p = field<float>(base, layout.top_p);
  const float* min_p = field<float>(base, layout.min_p);
  const int32_t* table = field<int32_t>(base, layout.block_table);
  const float* repetition = field<float>(base, layout.repetition_penalty);
  const float* presence = field<float>(base, layout.presence_penalty);
  const float* frequency = field<float>(base, layout.frequency_penalty);
  const int32_t* num_logprobs = field<int32_t>(base, layout.num_logprobs);
  const int32_t* penalty_offsets = field<int32_t>(base, layout.penalty_offsets);

  // Real requests: monotonic offsets, lengths within bounds, blocks and slots in range.
  expect_equal("query_start_loc", 0, qsl[0], 0, "offsets start at 0");
  int64_t first_query_len = -1;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int64_t query_len = int64_t{qsl[r + 1]} - qsl[r];
    FG_CHECK(query_len >= 1, "checked mode: query_start_loc[{}] = {}, expected more than query_start_loc[{}] = {} "
             "(offsets must increase over real requests; each owns at least one token)", r + 1, qsl[r + 1], r, qsl[r]);
    if (first_query_len < 0) first_query_len = query_len;
    if (contract.requires_uniform_query_len || uniform_decode)
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
  expect_equal("query_start_loc", num_reqs, qsl[num_reqs], num_tokens, "the number of real tokens");

  // The padded region, exactly as declared.
  for (int64_t t = num_tokens; t < T; ++t) {
    expect_equal("input_ids", t, input_ids[t], contract.input_ids_fill, "padding");
    expect_equal("positions", t, positions[t], contract.positions_fill, "padding");
    expect_equal("slot_mapping", t, slots[t], contract.slot_mapping_fill, "padding: KV writes are skipped");
  }
  for (int64_t r = num_reqs; r < R; ++r) {
    expect_equal("query_start_loc", r + 1, qsl[r + 1], qsl[num_reqs],
                 "the last real offset repeated: padded requests own zero tokens and offsets never decrease");
    expect_equal("seq_lens", r, seq_lens[r], contract.seq_lens_fill, "padding");
    expect_equal("logits_indices", r, logits_indices[r], 0, "padding");
    expect_equal("temperature", r, temperature[r], 0.0f, "padded rows sample greedily");
    expect_equal("top_k", r, top_k[r], 0, "padded rows sample greedily");
    expect_equal("top_p", r, top_p[r], 1.0f, "padded rows sample greedily");
    expect_equal("min_p", r, min_p[r], 0.0f, "padded rows sample greedily");
    for (int64_t b = 0; b < B; ++b)
      expect_equal("block_table", r * B + b, table[r * B + b], contract.block_table_fill,
                   "padded rows point at the null block");
    expect_equal("repetition_penalty", r, repetition[r], 1.0f, "padded rows have no penalties");
    expect_equal("presence_penalty", r, presence[r], 0.0f, "padded rows have no penalties");
    expect_equal("frequency_penalty", r, frequency[r], 0.0f, "padded rows have no penalties");
    expect_equal("num_logprobs", r, num_logprobs[r], -1, "padded rows want no logprobs");
  }

  // Penalties and logprobs of the real rows, then the penalty lists (sampling_params.h, item 0).
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
  for (int64_t r = 0; r < R; ++r) {
    FG_CHECK(penalty_offsets[r + 1] >= penalty_offsets[r] && penalty_offsets[r + 1] <= layout.penalty_capacity,
             "checked mode: penalty_offsets[{}] = {}, expected a value in [penalty_offsets[{}] = {}, {}] (offsets "
             "never decrease and stay within max_penalty_entries)",
             r + 1, penalty_offsets[r + 1], r, penalty_offsets[r], layout.penalty_capacity);
    const bool penalized = r < num_reqs && (repetition[r] != 1.0f || presence[r] != 0.0f || frequency[r] != 0.0f);
    if (!penalized)
      expect_equal("penalty_offsets", r + 1, penalty_offsets[r + 1], penalty_offsets[r],
                   r < num_reqs ? "a request without penalties has an empty list" : "padded rows have empty lists");
  }
  const int32_t* entries = field<int32_t>(base, layout.penalty_entries);
  // [V] (only when some row has a list): the last row that listed each token.
  std::vector<int64_t> listed_in(penalty_offsets[num_reqs] > 0 ? static_cast<size_t>(limits.vocab_size) : 0, -1);
  for (int64_t r = 0; r < num_reqs; ++r) {
    for (int64_t e = penalty_offsets[r]; e < penalty_offsets[r + 1]; ++e) {
      const int32_t token = entries[2 * e], count = entries[2 * e + 1];
      expect_range("penalty_entries.token", e, token, 0, limits.vocab_size, "a token id");
      expect_range("penalty_entries.count", e, count, 0, int64_t{1} << 31, "an output count");
      FG_CHECK(listed_in[token] != r, "checked mode: penalty_entries.token[{}] = {} is listed twice for request {}",
               e, token, r);
      listed_in[token] = r;
    }
  }
}

}  // namespace fg
