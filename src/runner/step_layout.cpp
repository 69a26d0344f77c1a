// runner/step_layout.cpp — field offsets of a padded step and tensor views over them.
#include "runner/step_layout.h"

#include "core/error.h"

namespace fg {

namespace {
// Each field starts on a 64-byte boundary so that kernels can use vector loads on any of them.
size_t place(size_t& cursor, size_t bytes) {
  const size_t at = (cursor + 63) / 64 * 64;
  cursor = at + bytes;
  return at;
}
char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }
}  // namespace

StepLayout StepLayout::make(int64_t T, int64_t R, int64_t B, int64_t C) {
  StepLayout l;
  l.num_tokens = T;
  l.num_reqs = R;
  l.max_blocks_per_seq = B;
  l.penalty_capacity = C;
  size_t c = 0;
  l.input_ids = place(c, 4 * T);
  l.positions = place(c, 4 * T);
  l.slot_mapping = place(c, 8 * T);
  l.query_start_loc = place(c, 4 * (R + 1));
  l.seq_lens = place(c, 4 * R);
  l.logits_indices = place(c, 4 * R);
  l.temperature = place(c, 4 * R);
  l.top_k = place(c, 4 * R);
  l.top_p = place(c, 4 * R);
  l.min_p = place(c, 4 * R);
  l.seed = place(c, 8 * R);
  l.step = place(c, 8 * R);
  l.repetition_penalty = place(c, 4 * R);
  l.presence_penalty = place(c, 4 * R);
  l.frequency_penalty = place(c, 4 * R);
  l.num_logprobs = place(c, 4 * R);
  l.block_table = place(c, 4 * R * B);
  l.penalty_offsets = place(c, 4 * (R + 1));
  l.penalty_entries = place(c, 8 * C);  // last: large, and mostly unused
  l.total_bytes = (c + 63) / 64 * 64;
  return l;
}

size_t StepLayout::copy_bytes(int64_t used_entries) const {
  FG_ASSERT(used_entries >= 0 && used_entries <= penalty_capacity);
  return penalty_entries + 8 * static_cast<size_t>(used_entries);
}

StepInputs StepLayout::inputs(void* base, Device device) const {
  StepInputs s;
  s.input_ids = Tensor(at(base, input_ids), DType::kI32, {num_tokens}, device);
  s.positions = Tensor(at(base, positions), DType::kI32, {num_tokens}, device);
  s.slot_mapping = Tensor(at(base, slot_mapping), DType::kI64, {num_tokens}, device);
  s.logits_indices = Tensor(at(base, logits_indices), DType::kI32, {num_reqs}, device);
  s.attention.query_start_loc = Tensor(at(base, query_start_loc), DType::kI32, {num_reqs + 1}, device);
  s.attention.seq_lens = Tensor(at(base, seq_lens), DType::kI32, {num_reqs}, device);
  s.attention.block_table = Tensor(at(base, block_table), DType::kI32, {num_reqs, max_blocks_per_seq}, device);
  return s;
}

SamplingTensors StepLayout::sampling(void* base, Device device) const {
  SamplingTensors s;
  s.temperature = Tensor(at(base, temperature), DType::kF32, {num_reqs}, device);
  s.top_k = Tensor(at(base, top_k), DType::kI32, {num_reqs}, device);
  s.top_p = Tensor(at(base, top_p), DType::kF32, {num_reqs}, device);
  s.min_p = Tensor(at(base, min_p), DType::kF32, {num_reqs}, device);
  s.seed = Tensor(at(base, seed), DType::kI64, {num_reqs}, device);
  s.step = Tensor(at(base, step), DType::kI64, {num_reqs}, device);
  s.repetition_penalty = Tensor(at(base, repetition_penalty), DType::kF32, {num_reqs}, device);
  s.presence_penalty = Tensor(at(base, presence_penalty), DType::kF32, {num_reqs}, device);
  s.frequency_penalty = Tensor(at(base, frequency_penalty), DType::kF32, {num_reqs}, device);
  s.num_logprobs = Tensor(at(base, num_logprobs), DType::kI32, {num_reqs}, device);
  return s;
}

PenaltyTensors StepLayout::penalty_lists(void* base, Device device) const {
  PenaltyTensors p;
  p.offsets = Tensor(at(base, penalty_offsets), DType::kI32, {num_reqs + 1}, device);
  p.entries = Tensor(at(base, penalty_entries), DType::kI32, {penalty_capacity, 2}, device);
  return p;
}

}  // namespace fg
