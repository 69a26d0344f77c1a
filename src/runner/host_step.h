// runner/host_step.h — building one step's inputs on the host, and shipping them to a backend.
//
// A step is a list of request chunks: each runs some new tokens of one request on top of the
// tokens already in its KV blocks. build_host_step lays them out in DESIGN.md's step format
// (token-major arrays plus per-request offsets, lengths and block-table rows).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/step.h"

namespace fg {

struct RequestChunk {
  std::vector<int32_t> token_ids;  // the tokens this step runs
  int64_t num_computed = 0;        // tokens of the request already in its KV blocks
  std::vector<int32_t> block_ids;  // the request's KV blocks, covering num_computed + tokens
  bool all_logits = false;         // logits for every token of the chunk, else for the last only
};

struct HostStep {
  std::vector<int32_t> input_ids;        // [num_tokens]
  std::vector<int32_t> positions;        // [num_tokens]
  std::vector<int64_t> slot_mapping;     // [num_tokens]
  std::vector<int32_t> logits_indices;   // [num_logits]
  std::vector<int32_t> query_start_loc;  // [num_reqs + 1]
  std::vector<int32_t> seq_lens;         // [num_reqs]
  std::vector<int32_t> block_table;      // [num_reqs, max_blocks_per_seq]; unused entries 0 (null)
  int64_t max_blocks_per_seq = 0;
};

HostStep build_host_step(const std::vector<RequestChunk>& chunks, int64_t block_size, int64_t max_blocks_per_seq);

// A step's inputs copied into backend memory (one allocation per field; the persistent,
// padded buffers of graph mode live in runner/ as well).
struct DeviceStep {
  StepInputs inputs;
  std::vector<std::shared_ptr<void>> memory;
};
DeviceStep upload_step(Backend& backend, const HostStep& step);

}  // namespace fg
