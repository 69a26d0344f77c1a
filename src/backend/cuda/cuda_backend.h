// backend/cuda/cuda_backend.h — the GPU backend: the Backend op set on one CUDA device, bf16
// activations, fp32 arithmetic inside every kernel.
//
// It owns a stream (every op and copy is enqueued on it), the cuBLASLt state of the linear (a
// handle, a fixed workspace, one fixed algorithm per bucket of token counts) and the attention
// backend the attention op delegates to. Ops only enqueue work: they never synchronise, allocate
// or read device memory on the host, so any step can be captured as a CUDA graph (DESIGN.md,
// "plan on the CPU, run on the GPU"). Host-side argument checks (dtypes, shapes, alignment) happen
// before each launch and fail with a message naming the op and the tensor.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention/cuda/attention_backend.h"
#include "backend/backend.h"
#include "backend/cuda/input_norm.h"
#include "backend/cuda/kv_cache_write.h"
#include "backend/cuda/linear_outputs.h"
#include "backend/cuda/qkv_rope.h"
#include "core/size_buckets.h"

namespace fg {

namespace cuda {
class CublasLtLinear;
class StreamedLinear;
}  // namespace cuda

// Which implementation a linear uses; kAuto is the bucket rule (see set_capture_sizes), and
// kSmallN our small-n kernel that the weight's shape selects (see cuda_linear.cpp). The others
// exist for tests and benchmarks that compare them: kSmallNDirect loads weights straight into
// registers (small_n_linear.h), kSmallNStreamed streams them through shared memory
// (streamed_linear.h).
enum class LinearPath { kAuto, kSmallN, kSmallNDirect, kSmallNStreamed, kCublasLt };

class CudaBackend final : public Backend {
 public:
  // Uses CUDA device `device`. The attention backend may come later (set_attention), since its
  // limits are known only once the model config is.
  explicit CudaBackend(int device = 0, std::unique_ptr<AttentionBackend> attention = nullptr);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::kCuda; }
  std::string name() const override { return "cuda"; }
  DType activation_dtype() const override { return DType::kBF16; }
  DType weight_dtype(DType) const override { return DType::kBF16; }

  cudaStream_t stream() const { return stream_; }
  int device_index() const { return device_; }
  int sm_count() const { return sm_count_; }

  void set_attention(std::unique_ptr<AttentionBackend> attention);
  AttentionBackend* attention_backend() const { return attention_.get(); }
  const AttentionBackend& require_attention() const;

  // The runner's graph capture sizes (token counts). A linear of n rows uses the algorithm of the
  // smallest size >= n, the same one a graph captured at that size uses (core/size_buckets.h), and
  // so does the attention backend's choice by request count. Call before the first capture: it
  // forgets the algorithms chosen so far.
  void set_capture_sizes(const std::vector<int64_t>& sizes) override;
  void set_batch_invariant(bool on) override;

  // Device memory, zero-filled (so that no kernel ever meets uninitialised bf16 NaNs, e.g. in
  // KV-cache blocks that an attention tile reads past the context and masks).
  Allocation allocate(DType dtype, std::initializer_list<int64_t> dims) override;
  // Asynchronous on the backend's stream; the source may be reused as soon as this returns.
  void copy_from_host(const Tensor& dst, const void* src) override;
  // Waits for the stream: the caller reads the data next.
  void copy_to_host(void* dst, const Tensor& src) override;
  void synchronize() override;
  // Pinned host memory, so that copies from it are truly asynchronous.
  Allocation allocate_staging(size_t bytes) override;

  // CUDA graph capture of the backend's stream (global mode: a stray allocation or sync inside a
  // captured step is an error, not a silent bug).
  bool supports_graphs() const override { return true; }
  void begin_capture() override;
  std::unique_ptr<Graph> end_capture() override;
  size_t graph_memory_bytes() const override { return graph_memory_bytes_; }

  // Those of the attention backend (which must be set).
  GraphSupport attention_graph_support() const override;
  const PaddingContract& attention_contract() const override;

  void embedding(const Tensor& ids, const Tensor& table, const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void add_rms_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                    const Tensor& out) override;
  void add(const Tensor& residual, const Tensor& x) override;
  void linear(const Tensor& x, const Tensor& weight, const Tensor* bias, const Tensor& out) override;
  // One matmul where the parts' weights (and biases, if any) lie back to back and their outputs
  // share a dtype; otherwise one linear per part (cuda_linear.cpp).
  void linear_group(const Tensor& x, const std::vector<LinearPart>& parts) override;
  void head_rms_norm(const Tensor& x, const Tensor& weight, float eps) override;
  void rope_and_cache_write(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                            const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                            const KvCacheLayer& cache) override;
  // One launch (rope_kernels.h) with the bits of the three steps where n is a small-n row count;
  // the steps elsewhere. Measured on qwen3-0.6b (bench/RESULTS.md, 2026-12-02,
  // graph ms): one launch is 6% faster at batch 1 and 8, 4% at 16, 3% at 17, but 4.6-4.9%
  // slower at 64, where the attention block itself is level and the cuBLASLt launches, norms and
  // silu_mul around it are slower, for reasons not yet known.
  // A function of n's bucket, so graph and eager runs take the same path (both give the same bits).
  void qk_norm_rope_cache_write(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                const Tensor& k_norm, float eps, const Tensor& positions, const Tensor& slot_mapping,
                                const Tensor& rope_cos_sin, const KvCacheLayer& cache) override;
  void attention(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                 const Tensor& out) override;
  void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  // One streamed launch where the gate and up weights form a span the gated streamed kernel takes
  // and n is a small-n row count; on cuBLASLt, where up_out follows gate_out, one GEMM of the
  // span into them and silu_mul of its halves; otherwise the three steps (cuda_linear.cpp).
  void linear_silu_mul(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                       const Tensor& up_out, const Tensor& out) override;
  // The norm and the residual add inside the small-n matmuls where n is a small-n row count (not
  // batch invariant; cuda_linear.cpp): the residual add is the matmul's store (every small-n
  // kernel); the norm rides in the input of the direct kernel (q/k/v spans below 32 MB) and of
  // the gated one (gate/up), which read the un-normalized rows, feed bf16(norm_weight ⊙ x) to the
  // tensor cores and scale each output by its row's 1 / rms (input_norm.h). Each saves a norm
  // kernel, a kernel's latency in a decode step. Otherwise the default steps; on cuBLASLt (n > 16)
  // linear_residual_add adds in the GEMM (C = the residual) and the norm is its own kernel.
  void linear_residual_add(const Tensor& x, const Tensor& weight, const Tensor& out, const Tensor& residual) override;
  // Past 16 rows (cuBLASLt) where span is given: the norm kernel, one GEMM of the parts' span into
  // it, and one copy of its columns into the parts.
  void rms_norm_linear_group(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                             const Tensor& span, const std::vector<LinearPart>& parts) override;
  void rms_norm_linear_silu_mul(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                                const Tensor& gate, const Tensor& up, const Tensor& gate_out, const Tensor& up_out,
                                const Tensor& out) override;
  // Where n is a small-n row count, RoPE and the cache write ride in the q/k/v matmul's store
  // (qkv_rope.h), with the bits of the two steps: one launch of the direct kernel where the span
  // takes its input norm (see above); the norm kernel then one streamed launch where the span
  // streams unsplit. Otherwise the two steps.
  // On cuBLASLt (n > 16, not batch invariant) where span is given: the norm kernel, one GEMM of
  // the q/k/v span into span, then RoPE and the cache write from its columns (three launches
  // where the steps take five).
  void rms_norm_qkv_rope_cache_write(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                                     const Tensor& span, const std::vector<LinearPart>& qkv, const Tensor& positions,
                                     const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                     const KvCacheLayer& cache) override;
  // Whether rms_norm_qkv_rope_cache_write of n rows over these parts runs as one launch.
  bool fuses_qkv_rope(int64_t n, const std::vector<LinearPart>& qkv) const;
  void gather_rows(const Tensor& x, const Tensor& indices, const Tensor& out) override;
  // The GPU sampler of backend/cuda/sampling.h: bit-identical to the CPU reference sampler.
  void sample(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids) override;
  // The token mask, penalties and logprobs (token_mask_kernels.h, penalty_kernels.h,
  // logprob_kernels.h; cuda_sampling_ops.cpp): bit-identical to the CPU reference ops.
  void apply_token_mask(const Tensor& logits, const Tensor& mask) override;
  void upload_token_mask(const Tensor& mask, const TokenMaskUpload& upload) override;
  bool runs_behind_host() const override { return true; }
  void raw_logprobs(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out) override;
  void apply_penalties(const Tensor& logits, const SamplingTensors& params,
                       const PenaltyTensors& penalties) override;
  void sampled_logprobs(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                        const PenaltyTensors& penalties, const LogprobTensors& out) override;

  // FP8 linears (cuda_fp8.cpp, fp8_kernels.h): the rounding fused into the norm and the
  // SiLU-and-multiply that produce a linear's input; the FP8 decode kernel where n is a small-n
  // row count (in groups of 16 rows when batch invariant), cuBLASLt's FP8 GEMM past them, its sums
  // then scaled per row and per channel by launch_fp8_scale_outputs, by the bucket rule. Parts
  // whose weights, scales (and biases) lie back to back run as one launch of the decode kernel;
  // past the small-n rows, one GEMM per part (the residual add's GEMM into its scratch `out`).
  // A gate/up span that streams unsplit at decode rows takes SiLU-and-multiply into its store
  // (StreamedLinear::run_gated_fp8), and the product is then rounded for down_proj.
  void quantize_fp8(const Tensor& x, float static_scale, const Fp8Rows& out) override;
  void rms_norm_quantize_fp8(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                             float static_scale, const Fp8Rows& out) override;
  void silu_mul_quantize_fp8(const Tensor& gate, const Tensor& up, const Tensor& act, float static_scale,
                             const Fp8Rows& out) override;
  void linear_fp8_group(const Fp8Rows& x, const std::vector<Fp8LinearPart>& parts) override;
  void linear_fp8_qkv_rope_cache_write(const Fp8Rows& x, const std::vector<Fp8LinearPart>& qkv, const Tensor& positions,
                                       const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                       const KvCacheLayer& cache) override;
  void linear_fp8_residual_add(const Fp8Rows& x, const Tensor& weight, const Tensor& scale, const Tensor& out,
                               const Tensor& residual) override;
  void linear_fp8_silu_mul_quantize(const Fp8Rows& x, const Fp8LinearPart& gate, const Fp8LinearPart& up,
                                    const Tensor& act, float static_scale, const Fp8Rows& out) override;
  void quantize_weight_fp8(const Tensor& w, const Tensor& q, const Tensor& scales) override;

  // linear() with the implementation forced (the kSmallN paths take at most 16 rows).
  void linear_with(LinearPath path, const Tensor& x, const Tensor& weight, const Tensor* bias, const Tensor& out);

 private:
  // A head norm's weight, checked: head_dim 8 * 2^k up to 256 (the shuffle tree's lanes).
  void check_head_norm_weight(const Tensor& weight) const;
  // The shapes of rope_and_cache_write's inputs, checked.
  struct RopeShape {
    int64_t n, heads, kv_heads, head_dim, max_positions, slots;
  };
  RopeShape check_rope_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                              const Tensor& slot_mapping, const Tensor& rope_cos_sin, const KvCacheLayer& cache) const;
  // The checked cache as its writers see it (kv_cache_write.h).
  static cuda::KvCacheWrite kv_cache_write(const KvCacheLayer& cache, const RopeShape& r) {
    return {cache.k.data, cache.v.data, r.slots, cache.k.dtype == DType::kF8E4M3, cache.k_scale, cache.v_scale};
  }
  // The RoPE inputs and the (BF16) cache of a fused q/k/v store (qkv_rope.h), checked by
  // check_rope_inputs as r.
  static cuda::QkvRope qkv_rope(const RopeShape& r, const Tensor& positions, const Tensor& slot_mapping,
                                const Tensor& rope_cos_sin, const KvCacheLayer& cache);
  // Whether a linear of n rows by `path` runs on cuBLASLt (the bucket rule for kAuto).
  bool runs_cublaslt(LinearPath path, int64_t n) const;
  // A checked linear by a small-n path (kAuto: the small-n kernel, in 16-row groups when batch
  // invariant) over weight [out_features, in] (for a group, the parts' weights back to back).
  void run_small_n(LinearPath path, const Tensor& x, const void* weight, const void* bias,
                   const cuda::LinearOutputs& outputs, int64_t out_features, DType out_dtype);
  // Whether a step of n rows may fuse work into a small-n matmul (not batch invariant, n a small-n
  // row count), whether a weight's kernel takes an input norm, and whether a gate/up pair runs
  // as one gated streamed launch.
  bool in_small_n_bucket(int64_t n) const;
  bool fuses_small_n(int64_t n) const;
  bool takes_input_norm(int64_t out_features, int64_t in) const;
  bool runs_gated(int64_t n, const Tensor& gate, const Tensor& up) const;
  // The gate/up span as one cuBLASLt GEMM into gate_out and up_out as one [n, 2I] scratch, then
  // silu_mul of its halves (linear_silu_mul past the small-n rows).
  bool runs_gate_up_span(int64_t n, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                         const Tensor& up_out) const;
  void run_gate_up_span(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                        const Tensor& up_out, const Tensor& out);
  // Whether a group of parts runs past the small-n rows as one cuBLASLt GEMM into `span`
  // (run_span_gemm, on the normalized rows), then RoPE from its columns (run_qkv_span, for
  // rms_norm_qkv_rope_cache_write) or a copy out of them (rms_norm_linear_group).
  bool runs_span(int64_t n, const Tensor& span, const std::vector<LinearPart>& parts) const;
  void run_span_gemm(const Tensor& x, const Tensor& span, const std::vector<LinearPart>& parts);
  void run_qkv_span(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed, const Tensor& span,
                    const std::vector<LinearPart>& qkv, const Tensor& positions, const Tensor& slot_mapping,
                    const Tensor& rope_cos_sin, const KvCacheLayer& cache);
  // The gated streamed launch, its input normalized when `norm` is enabled.
  void run_gated(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& gate_out, const Tensor& up_out,
                 const Tensor& out, const cuda::InputNorm& norm);
  // One launch of a small-n kernel (path kSmallN, kSmallNDirect or kSmallNStreamed) over n <= 16 rows.
  void launch_small_n(LinearPath path, const void* x, const void* weight, const void* bias,
                      const cuda::LinearOutputs& out, bool out_f32, int64_t n, int64_t in, int64_t out_features);

  // The FP8 decode kernel over rows of x (in groups of 16) into `out`, whose columns are the
  // weight's out_features rows.
  void run_fp8_small_n(const Fp8Rows& x, const void* weight, const void* scales, const void* bias,
                       const cuda::LinearOutputs& out, int64_t out_features);

  int device_ = 0;
  int sm_count_ = 0;
  bool batch_invariant_ = false;  // see Backend::set_batch_invariant
  cudaStream_t stream_ = nullptr;
  bool capturing_ = false;
  size_t graph_memory_bytes_ = 0;  // device memory taken by instantiated graphs
  SizeBuckets buckets_;  // of token rows, for the linears; its sizes also reach a later attention backend
  std::unique_ptr<cuda::CublasLtLinear> gemm_;
  std::unique_ptr<cuda::StreamedLinear> streamed_;
  std::unique_ptr<AttentionBackend> attention_;
};

}  // namespace fg
