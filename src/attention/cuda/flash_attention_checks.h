// attention/cuda/flash_attention_checks.h — host-side validation shared by the `flash` and
// `split_kv` backends: what a backend refuses at construction (head dims, block sizes, head
// counts) and the shape checks of every run(). Host code only (g++), so it may format messages;
// the checks read shapes, never device memory, so they cost no sync.
#pragma once

#include <cstdint>
#include <string>

#include "attention/cuda/attention_backend.h"
#include "attention/cuda/paged_attention_args.h"

namespace fg::attn {

// Sizes of one run(), read from the tensors' shapes.
struct RunShapes {
  int num_tokens = 0;   // rows of q and out
  int num_reqs = 0;     // entries of seq_lens
  int max_blocks = 0;   // block_table row width
  int num_blocks = 0;   // blocks of the cache
  int group = 0;        // query heads per KV head
};

// Refuses limits the kernels do not serve: head_dim other than 64 or 128, a block size that is not
// a positive multiple of 16, head counts that do not form whole GQA groups, empty maxima.
void check_attention_limits(const std::string& backend, const AttentionLimits& limits);

// Checks dtypes, devices and shapes of one run() against the limits; names the argument at fault.
RunShapes check_attention_run(const std::string& backend, const AttentionLimits& limits, const Tensor& q,
                              const KvCacheLayer& cache, const AttentionMetadata& meta, const Tensor& out);

// The kernels' arguments for one run() whose shapes check_attention_run returned.
PagedAttentionArgs paged_attention_args(const RunShapes& shapes, const AttentionLimits& limits, const Tensor& q,
                                        const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                                        const Tensor& out);

// ceil(2^32 / block_size): the kernels divide positions by the block size with one __umulhi,
// exact while position * block_size < 2^32 (check_attention_run enforces it for the table width).
uint32_t block_size_magic(int64_t block_size);

}  // namespace fg::attn
