// runner/step_layout.h — where each field of a step lives inside the one block of memory that
// is staged on the host and copied to the device in a single transfer.
//
// A layout is a function of the padded shape only (tokens, requests, block-table width), so a
// graph captured for a bucket reads its inputs from fixed addresses: the device arena's base plus
// that bucket's offsets. Every step of the bucket is staged with the same layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/step.h"

namespace fg {


struct StepLayout {
  int64_t num_tokens = 0;  // T, padded
  int64_t num_reqs = 0;    // R, padded
  int64_t max_blocks_per_seq = 0;
  // Byte offsets from the arena base.
  size_t input_ids = 0, positions = 0, slot_mapping = 0, query_start_loc = 0, seq_lens = 0, logits_indices = 0;
  size_t temperature = 0, top_k = 0, top_p = 0, min_p = 0, seed = 0, step = 0, block_table = 0;
  size_t total_bytes = 0;

  static StepLayout make(int64_t num_tokens, int64_t num_reqs, int64_t max_blocks_per_seq);

  // Views of the fields at `base` (host staging or device arena) with the padded shapes.
  StepInputs inputs(void* base, Device device) const;
  SamplingTensors sampling(void* base, Device device) const;
};

}  // namespace fg
