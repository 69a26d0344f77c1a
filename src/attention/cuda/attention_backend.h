// attention/cuda/attention_backend.h — the interface of the GPU attention backends (`flash`,
// `split_kv`): paged causal attention over a step's metadata, with a declared padding contract
// and graph-support level.
//
// run() enqueues on `stream` and never synchronises, allocates or reads host memory: every
// per-step value comes from the device tensors of AttentionMetadata, and its launch parameters
// depend only on tensor shapes (the padded shapes under graph capture). Workspaces are allocated
// once, at construction, for the largest shapes the backend will see.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention_contract.h"
#include "attention/attention_metadata.h"
#include "attention/cuda/split_kv_attention_kernels.h"

namespace fg {

// What the GPU kernels may read before their PDL wait (pdl.cuh), so before the kernel launched
// just before them (RoPE and the cache write) has finished; every GPU backend's contract lists it.
inline constexpr const char* kReadsBeforePdlWait =
    "the step's metadata (query_start_loc, seq_lens, block_table) and every KV row of a request other than "
    "this step's own positions [seq_len - n_q, seq_len) must be in place before the kernel launched just "
    "before the attention starts: the kernels read them before their PDL wait, to overlap that kernel's "
    "tail (the engine uploads the metadata with a copy before the step's first kernel, and a step writes "
    "only its own tokens' slots)";

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  virtual std::string name() const = 0;
  virtual GraphSupport graph_support() const = 0;
  // The padding contract the backend declared when it was built (DESIGN.md point 4).
  const PaddingContract& contract() const { return contract_; }
  // The largest step it serves.
  const AttentionLimits& limits() const { return limits_; }
  // One line for logs and benchmark tables: kernel, tile shapes, scheduling, split policy,
  // workspace. Defaults to the name for backends that have nothing more to say.
  virtual std::string describe() const { return name(); }
  // The runner's graph capture sizes. A backend that chooses its kernel by the request count must
  // choose by the bucket that holds it (core/size_buckets.h), as a graph captured at the bucket's
  // size does (DESIGN.md point 7). Backends with one kernel ignore it.
  virtual void set_capture_sizes(const std::vector<int64_t>& sizes) { (void)sizes; }
  // Backend::set_batch_invariant: a backend that chooses its kernel by the batch must then stop.
  virtual void set_batch_invariant(bool on) { (void)on; }

  // q [n, nh * hd] BF16, cache k/v [num_blocks, block_size, nkv, hd] BF16, out [n, nh * hd] BF16.
  // Semantics as Backend::attention: query token j of a request with n_q query tokens and context
  // L attends to context positions [0, L - n_q + j]; rows owned by no request are not written.
  virtual void run(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                   const Tensor& out, cudaStream_t stream) = 0;

 protected:
  AttentionBackend(const AttentionLimits& limits, PaddingContract contract)
      : limits_(limits), contract_(std::move(contract)) {}

  AttentionLimits limits_;
  PaddingContract contract_;
};

// Factories; "flash" (graph support: always), "split_kv" (uniform_decode) and "auto" (always:
// split_kv for the small uniform decode batches it serves better, flash for the rest).
// make_attention_backend chooses by name: flash, split_kv, reference (reference_attention.h), or
// auto, which falls back to the reference where flash and split_kv do not serve the shape.
std::unique_ptr<AttentionBackend> make_flash_attention(const AttentionLimits& limits);
// bounds: the split policy's (split_kv_attention_kernels.h); the defaults are the `split_kv` backend's.
std::unique_ptr<AttentionBackend> make_split_kv_attention(const AttentionLimits& limits,
                                                         const attn::SplitKvBounds& bounds = {});
std::unique_ptr<AttentionBackend> make_auto_attention(const AttentionLimits& limits);
std::unique_ptr<AttentionBackend> make_attention_backend(const std::string& name, const AttentionLimits& limits);

}  // namespace fg
