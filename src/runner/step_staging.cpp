// runner/step_staging.cpp — real rows from the scheduler, padded rows from the contract, and the
// penalty lists of the requests that have penalties.
#include "runner/step_staging.h"

#include <algorithm>

#include "core/error.h"

namespace fg {

namespace {
template <typename T>
T* field(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}
}  // namespace

StepShape step_shape(const std::vector<ScheduledRequest>& requests) {
  StepShape s;
  s.num_reqs = static_cast<int64_t>(requests.size());
  s.uniform_decode = !requests.empty();
  for (const ScheduledRequest& r : requests) {
    s.num_tokens += static_cast<int64_t>(r.token_ids.size());
    s.uniform_decode = s.uniform_decode && r.token_ids.size() == 1;
  }
  return s;
}

void PenaltyListBuilder::touch(int32_t token, const char* field_name, int64_t index, int64_t request) {
  FG_CHECK(token >= 0 && token < kMaxSamplingVocab, "request {} of the step has {}[{}] = {}, not a token id", request,
           field_name, index, token);
  if (static_cast<size_t>(token) >= seen_.size()) {
    const size_t size = std::max<size_t>(static_cast<size_t>(token) + 1, seen_.size() * 2);
    seen_.resize(size, 0);
    count_.resize(size, 0);
  }
  if (seen_[token] != list_) {
    seen_[token] = list_;
    count_[token] = 0;
    order_.push_back(token);
  }
}

int64_t PenaltyListBuilder::collect(std::span<const int32_t> prompt_ids, std::span<const int32_t> output_ids,
                                    bool with_prompt, int64_t request) {
  if (++list_ == 0) {  // the stamps wrapped: forget them all
    std::fill(seen_.begin(), seen_.end(), 0);
    list_ = 1;
  }
  order_.clear();
  for (size_t i = 0; i < output_ids.size(); ++i) {
    touch(output_ids[i], "output_ids", static_cast<int64_t>(i), request);
    ++count_[output_ids[i]];
  }
  if (with_prompt)
    for (size_t i = 0; i < prompt_ids.size(); ++i) touch(prompt_ids[i], "prompt_ids", static_cast<int64_t>(i), request);
  return static_cast<int64_t>(order_.size());
}

void PenaltyListBuilder::write(int32_t* entries) const {
  for (size_t i = 0; i < order_.size(); ++i) {
    entries[2 * i] = order_[i];
    entries[2 * i + 1] = count_[order_[i]];
  }
}

StagedStep stage_step(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                      const PaddingContract& contract, int64_t block_size, void* base, PenaltyListBuilder* builder) {
  const StepShape shape = step_shape(requests);
  const int64_t T = layout.num_tokens, R = layout.num_reqs, B = layout.max_blocks_per_seq;
  FG_CHECK(shape.num_tokens <= T && shape.num_reqs <= R, "a step of {} tokens over {} requests does not fit ({}, {})",
           shape.num_tokens, shape.num_reqs, T, R);
  PenaltyListBuilder local;
  if (builder == nullptr) builder = &local;
  int32_t* input_ids = field<int32_t>(base, layout.input_ids);
  int32_t* positions = field<int32_t>(base, layout.positions);
  int64_t* slots = field<int64_t>(base, layout.slot_mapping);
  int32_t* qsl = field<int32_t>(base, layout.query_start_loc);
  int32_t* seq_lens = field<int32_t>(base, layout.seq_lens);
  int32_t* logits_indices = field<int32_t>(base, layout.logits_indices);
  float* temperature = field<float>(base, layout.temperature);
  int32_t* top_k = field<int32_t>(base, layout.top_k);
  float* top_p = field<float>(base, layout.top_p);
  float* min_p = field<float>(base, layout.min_p);
  int64_t* seed = field<int64_t>(base, layout.seed);
  int64_t* step = field<int64_t>(base, layout.step);
  float* repetition = field<float>(base, layout.repetition_penalty);
  float* presence = field<float>(base, layout.presence_penalty);
  float* frequency = field<float>(base, layout.frequency_penalty);
  int32_t* num_logprobs = field<int32_t>(base, layout.num_logprobs);
  int32_t* block_table = field<int32_t>(base, layout.block_table);
  int32_t* penalty_offsets = field<int32_t>(base, layout.penalty_offsets);
  int32_t* penalty_entries = field<int32_t>(base, layout.penalty_entries);

  StagedStep staged;
  int64_t token = 0;
  qsl[0] = 0;
  penalty_offsets[0] = 0;
  for (int64_t r = 0; r < shape.num_reqs; ++r) {
    const ScheduledRequest& req = requests[r];
    const int64_t n = static_cast<int64_t>(req.token_ids.size());
    const int64_t total = req.num_computed + n;
    FG_CHECK(n >= 1, "request {} of the step runs no tokens", r);
    FG_CHECK(static_cast<int64_t>(req.block_ids.size()) * block_size >= total,
             "request {} needs {} tokens of KV blocks but holds {} blocks of {}", r, total, req.block_ids.size(),
             block_size);
    FG_CHECK(static_cast<int64_t>(req.block_ids.size()) <= B, "request {} holds {} blocks, a block-table row {}", r,
             req.block_ids.size(), B);
    for (int64_t j = 0; j < n; ++j, ++token) {
      const int64_t position = req.num_computed + j;
      input_ids[token] = req.token_ids[j];
      positions[token] = static_cast<int32_t>(position);
      slots[token] = static_cast<int64_t>(req.block_ids[position / block_size]) * block_size + position % block_size;
    }
    qsl[r + 1] = static_cast<int32_t>(token);
    seq_lens[r] = static_cast<int32_t>(total);
    logits_indices[r] = static_cast<int32_t>(token - 1);
    const SamplingParams& sp = req.sampling;
    temperature[r] = sp.temperature;
    top_k[r] = sp.top_k;
    top_p[r] = sp.top_p;
    min_p[r] = sp.min_p;
    seed[r] = sp.seed;
    step[r] = sp.step;
    repetition[r] = sp.repetition_penalty;
    presence[r] = sp.presence_penalty;
    frequency[r] = sp.frequency_penalty;
    num_logprobs[r] = sp.num_logprobs;
    staged.any_logprobs = staged.any_logprobs || sp.num_logprobs >= 0;
    if (sp.has_penalties()) {
      const int64_t listed = builder->collect(req.prompt_ids, req.output_ids, sp.repetition_penalty != 1.0f, r);
      FG_CHECK(staged.penalty_entries + listed <= layout.penalty_capacity,
               "the step's penalty lists need at least {} entries (distinct prompt and output tokens of the requests "
               "with penalties, up to request {}), more than RunnerOptions::max_penalty_entries = {}; raise "
               "max_penalty_entries or schedule fewer such requests per step",
               staged.penalty_entries + listed, r, layout.penalty_capacity);
      builder->write(penalty_entries + 2 * staged.penalty_entries);
      staged.penalty_entries += listed;
    }
    penalty_offsets[r + 1] = static_cast<int32_t>(staged.penalty_entries);
    int32_t* row = block_table + r * B;
    std::copy(req.block_ids.begin(), req.block_ids.end(), row);
    std::fill(row + req.block_ids.size(), row + B, contract.block_table_fill);
  }

  // The padded region, exactly as the contract declares.
  std::fill(input_ids + token, input_ids + T, contract.input_ids_fill);
  std::fill(positions + token, positions + T, contract.positions_fill);
  std::fill(slots + token, slots + T, contract.slot_mapping_fill);
  std::fill(qsl + shape.num_reqs + 1, qsl + R + 1, qsl[shape.num_reqs]);  // never -1: see the seed
  std::fill(seq_lens + shape.num_reqs, seq_lens + R, contract.seq_lens_fill);
  std::fill(logits_indices + shape.num_reqs, logits_indices + R, 0);
  const SamplingParams neutral;
  std::fill(temperature + shape.num_reqs, temperature + R, neutral.temperature);
  std::fill(top_k + shape.num_reqs, top_k + R, neutral.top_k);
  std::fill(top_p + shape.num_reqs, top_p + R, neutral.top_p);
  std::fill(min_p + shape.num_reqs, min_p + R, neutral.min_p);
  std::fill(seed + shape.num_reqs, seed + R, neutral.seed);
  std::fill(step + shape.num_reqs, step + R, neutral.step);
  std::fill(repetition + shape.num_reqs, repetition + R, neutral.repetition_penalty);
  std::fill(presence + shape.num_reqs, presence + R, neutral.presence_penalty);
  std::fill(frequency + shape.num_reqs, frequency + R, neutral.frequency_penalty);
  std::fill(num_logprobs + shape.num_reqs, num_logprobs + R, neutral.num_logprobs);
  std::fill(block_table + shape.num_reqs * B, block_table + R * B, contract.block_table_fill);
  // Padded rows own empty lists, like their zero query tokens: the offsets never decrease.
  std::fill(penalty_offsets + shape.num_reqs + 1, penalty_offsets + R + 1, penalty_offsets[shape.num_reqs]);
  staged.copy_bytes = layout.copy_bytes(staged.penalty_entries);
  return staged;
}

}  // namespace fg
