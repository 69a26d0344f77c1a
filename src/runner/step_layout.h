// runner/step_layout.h — where each field of the step table (step_fields.h) lives inside the one
// block of memory that is staged on the host and copied to the device in a single transfer.
//
// A layout is a function of the padded shape only (tokens, requests, block-table width, logits
// rows) and of the penalty-list capacity (a runner option), so a graph captured for a bucket reads
// its inputs from fixed addresses: the device arena's base plus that bucket's offsets. Every step of
// the bucket is staged with the same layout.
//
// The token mask (step_fields.h) is not in the block: its offset is 0 from a base of its own, the
// persistent mask buffer, whose rows [0, R) a layout views.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "runner/step_fields.h"

namespace fg {

struct StepLayout {
  int64_t num_tokens = 0;  // T, padded
  int64_t num_reqs = 0;    // R, padded
  int64_t max_blocks_per_seq = 0;  // B
  int64_t penalty_capacity = 0;    // C: penalty entries the layout holds
  int64_t num_logits = 0;          // L: logits rows (R in a sampled step)
  int64_t mask_words = 0;          // W: token-mask words per request, ceil(V / 32) (0: no mask view)
  std::array<size_t, kNumStepFields> offsets{};  // byte offsets from the base, by StepField
  size_t total_bytes = 0;

  // num_logits < 0: one logits row per request (R).
  static StepLayout make(int64_t num_tokens, int64_t num_reqs, int64_t max_blocks_per_seq,
                         int64_t penalty_capacity = 0, int64_t num_logits = -1, int64_t mask_words = 0);

  // Elements of `field` in this layout (a [C, 2] field counts 2C), and its shape.
  int64_t numel(StepField field) const;
  // The bytes a step with `used_entries` penalty entries must copy: everything before the entries
  // and the entries it uses (a multiple of 4).
  size_t copy_bytes(int64_t used_entries) const;

  // The field at `base` (host staging or device arena; for the token mask, its own buffer) as
  // elements of T, which must be its dtype.
  template <typename T>
  T* at(void* base, StepField field) const {
    FG_ASSERT(dtype_of<T>() == step_field(field).dtype);
    return reinterpret_cast<T*>(static_cast<char*>(base) + offsets[static_cast<size_t>(field)]);
  }
  template <typename T>
  const T* at(const void* base, StepField field) const {
    return at<T>(const_cast<void*>(base), field);
  }
  // A view of one field at `base` with its padded shape, and every field's view where the model
  // and the sampler read it (penalties.original is left for the caller: it is not an input). The
  // token mask's view is over `mask_base` (undefined when it is null or mask_words is 0).
  Tensor view(void* base, StepField field, Device device) const;
  StepViews views(void* base, Device device, void* mask_base = nullptr) const;
};

}  // namespace fg
