// runner/step_layout.cpp — field offsets of a padded step and tensor views over them, from the
// step table.
#include "runner/step_layout.h"

#include "core/error.h"

namespace fg {

StepLayout StepLayout::make(int64_t T, int64_t R, int64_t B, int64_t C, int64_t L, int64_t W) {
  StepLayout l;
  l.num_tokens = T;
  l.num_reqs = R;
  l.max_blocks_per_seq = B;
  l.penalty_capacity = C;
  l.num_logits = L < 0 ? R : L;
  l.mask_words = W;
  size_t cursor = 0;
  for (size_t i = 0; i < kNumStepFields; ++i) {
    if (step_fields()[i].own_buffer) continue;  // offset 0 in a buffer of its own
    // Each field starts on a 64-byte boundary so that kernels can use vector loads on any of them.
    const size_t at = (cursor + 63) / 64 * 64;
    l.offsets[i] = at;
    cursor = at + static_cast<size_t>(l.numel(static_cast<StepField>(i))) * dtype_size(step_fields()[i].dtype);
  }
  l.total_bytes = (cursor + 63) / 64 * 64;
  return l;
}

int64_t StepLayout::numel(StepField field) const {
  switch (step_field(field).extent) {
    case Extent::kTokens: return num_tokens;
    case Extent::kRequests: return num_reqs;
    case Extent::kRequestOffsets: return num_reqs + 1;
    case Extent::kBlockTable: return num_reqs * max_blocks_per_seq;
    case Extent::kLogitsRows: return num_logits;
    case Extent::kPenaltyEntries: return 2 * penalty_capacity;
    case Extent::kMaskRows: return num_reqs * mask_words;
  }
  FG_ASSERT(false);
}

size_t StepLayout::copy_bytes(int64_t used_entries) const {
  FG_ASSERT(used_entries >= 0 && used_entries <= penalty_capacity);
  return offsets[static_cast<size_t>(StepField::kPenaltyEntries)] + 8 * static_cast<size_t>(used_entries);
}

Tensor StepLayout::view(void* base, StepField field, Device device) const {
  const StepFieldSpec& spec = step_field(field);
  void* data = static_cast<char*>(base) + offsets[static_cast<size_t>(field)];
  switch (spec.extent) {
    case Extent::kBlockTable: return Tensor(data, spec.dtype, {num_reqs, max_blocks_per_seq}, device);
    case Extent::kPenaltyEntries: return Tensor(data, spec.dtype, {penalty_capacity, 2}, device);
    case Extent::kMaskRows: return Tensor(data, spec.dtype, {num_reqs, mask_words}, device);
    default: return Tensor(data, spec.dtype, {numel(field)}, device);
  }
}

StepViews StepLayout::views(void* base, Device device, void* mask_base) const {
  StepViews v;
  for (size_t i = 0; i < kNumStepFields; ++i) {
    const StepFieldSpec& spec = step_fields()[i];
    if (spec.own_buffer) {
      if (mask_base != nullptr && mask_words > 0) v.*spec.own_buffer = view(mask_base, static_cast<StepField>(i), device);
      continue;
    }
    const Tensor t = view(base, static_cast<StepField>(i), device);
    if (spec.input) v.inputs.*spec.input = t;
    if (spec.attention) v.inputs.attention.*spec.attention = t;
    if (spec.sampling) v.sampling.*spec.sampling->tensor = t;
    if (spec.penalty) v.penalties.*spec.penalty = t;
  }
  return v;
}

}  // namespace fg
