// model/step.h — the inputs of one engine step, in DESIGN.md's step format, and the paged KV
// cache they address.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"

namespace fg {

// Backend tensors holding one step's per-token and per-request inputs.
struct StepInputs {
  Tensor input_ids;       // I32 [num_tokens]
  Tensor positions;       // I32 [num_tokens]
  Tensor slot_mapping;    // I64 [num_tokens]; -1 = do not write the KV cache
  Tensor logits_indices;  // I32 [num_logits]; token rows whose logits the step returns
  AttentionMetadata attention;
};

// All layers' paged KV caches, sharing one block numbering. Block 0 is the null block.
struct KvCache {
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  std::vector<KvCacheLayer> layers;
  std::vector<std::shared_ptr<void>> memory;
};

// K and V pools of [num_blocks, block_size, nkv, hd] per layer, in `dtype`.
KvCache allocate_kv_cache(Backend& backend, const ModelConfig& config, int64_t num_blocks, int64_t block_size,
                          DType dtype);

}  // namespace fg
