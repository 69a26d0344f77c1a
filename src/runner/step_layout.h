// runner/step_layout.h — where each field of a step lives inside the one block of memory that
// is staged on the host and copied to the device in a single transfer.
//
// A layout is a function of the padded shape only (tokens, requests, block-table width) and of the
// penalty-list capacity (a runner option), so a graph captured for a bucket reads its inputs from
// fixed addresses: the device arena's base plus that bucket's offsets. Every step of the bucket is
// staged with the same layout.
//
// The penalty entries come last: a step copies the layout only up to the entries it uses
// (copy_bytes), so a step without penalties does not pay for the list capacity.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/step.h"

namespace fg {


struct StepLayout {
  int64_t num_tokens = 0;  // T, padded
  int64_t num_reqs = 0;    // R, padded
  int64_t max_blocks_per_seq = 0;
  int64_t penalty_capacity = 0;  // C: penalty entries the layout holds
  // Byte offsets from the arena base.
  size_t input_ids = 0, positions = 0, slot_mapping = 0, query_start_loc = 0, seq_lens = 0, logits_indices = 0;
  size_t temperature = 0, top_k = 0, top_p = 0, min_p = 0, seed = 0, step = 0;
  size_t repetition_penalty = 0, presence_penalty = 0, frequency_penalty = 0, num_logprobs = 0;
  size_t block_table = 0;
  size_t penalty_offsets = 0;  // I32 [R + 1]
  size_t penalty_entries = 0;  // I32 [C, 2]: last
  size_t total_bytes = 0;

  static StepLayout make(int64_t num_tokens, int64_t num_reqs, int64_t max_blocks_per_seq,
                         int64_t penalty_capacity = 0);

  // The bytes a step with `used_entries` penalty entries must copy: everything before the entries
  // and the entries it uses (a multiple of 4).
  size_t copy_bytes(int64_t used_entries) const;

  // Views of the fields at `base` (host staging or device arena) with the padded shapes.
  StepInputs inputs(void* base, Device device) const;
  SamplingTensors sampling(void* base, Device device) const;
  // offsets I32 [R + 1] and entries I32 [C, 2]; `original` is left for the caller (it is not input).
  PenaltyTensors penalty_lists(void* base, Device device) const;
};

}  // namespace fg
