// backend/cuda/cuda_backend.cpp — CudaBackend's device, stream and memory, and the argument
// checks and launches of its row-wise ops (embedding, norms, RoPE + cache write, SiLU-and-multiply,
// row gather, attention). The linear lives in cuda_linear.cpp.
#include "backend/cuda/cuda_backend.h"

#include <algorithm>

#include "backend/cuda/activation_kernels.h"
#include "backend/cuda/cublaslt_linear.h"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/gather_kernels.h"
#include "backend/cuda/norm_kernels.h"
#include "backend/cuda/rope_kernels.h"
#include "backend/cuda/sampling.h"
#include "backend/cuda/streamed_linear.h"
#include "core/cuda/tensor_checks.h"

namespace fg {

using cuda::bf16_ptr;
using cuda::require;
using cuda::require_aligned16;
using cuda::require_weight;

namespace {

class CudaGraph final : public Graph {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  void replay() override { FG_CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;  // the backend's, which outlives its graphs
};

void check_row_norm(const Tensor& x, const Tensor& weight, const Tensor& out, const char* op) {
  require(x, DType::kBF16, op);
  require(out, DType::kBF16, op);
  require_weight(weight, op);
  FG_CHECK(x.rank == 2, "cuda backend: {} expects [n, hidden] input, got {}", op, x.shape_string());
  const int64_t hidden = x.dim(1);
  FG_CHECK(weight.numel() == hidden && out.same_shape({x.dim(0), hidden}),
           "cuda backend: {} of input {} with weight {} into {}", op, x.shape_string(), weight.shape_string(),
           out.shape_string());
  FG_CHECK(hidden % 8 == 0 && hidden <= cuda::kMaxNormHidden,
           "cuda backend: {} needs a hidden size that is a multiple of 8 and at most {}, got {}", op,
           cuda::kMaxNormHidden, hidden);
  require_aligned16(x, op);
  require_aligned16(weight, op);
  require_aligned16(out, op);
}

}  // namespace

CudaBackend::CudaBackend(int device, std::unique_ptr<AttentionBackend> attention)
    : device_(device), attention_(std::move(attention)) {
  FG_CUDA_CHECK(cudaSetDevice(device_));
  FG_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  // Kernels read pinned host memory at its host address (upload_token_mask): unified addressing.
  int unified = 0;
  FG_CUDA_CHECK(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, device_));
  FG_CHECK(unified != 0, "cuda backend: device {} lacks unified addressing, which the token-mask upload needs",
           device_);
  // A blocking stream (not cudaStreamNonBlocking): work that setup code or tests put on the legacy
  // default stream (cudaMemset, cudaMemcpy) stays ordered before this backend's kernels.
  FG_CUDA_CHECK(cudaStreamCreate(&stream_));
  gemm_ = std::make_unique<cuda::CublasLtLinear>();
  streamed_ = std::make_unique<cuda::StreamedLinear>(sm_count_);
}

CudaBackend::~CudaBackend() {
  // No throwing here: errors of the last work were reported by whoever synchronised last.
  cudaStreamSynchronize(stream_);
  attention_.reset();
  gemm_.reset();
  cudaStreamDestroy(stream_);
}

void CudaBackend::set_attention(std::unique_ptr<AttentionBackend> attention) {
  attention_ = std::move(attention);
  if (!attention_) return;
  attention_->set_capture_sizes(buckets_.sizes());
  attention_->set_batch_invariant(batch_invariant_);
}

void CudaBackend::set_capture_sizes(const std::vector<int64_t>& sizes) {
  buckets_ = SizeBuckets(sizes);
  gemm_->clear_plans();
  if (attention_) attention_->set_capture_sizes(sizes);
}

void CudaBackend::set_batch_invariant(bool on) {
  batch_invariant_ = on;
  if (attention_) attention_->set_batch_invariant(on);
}

Allocation CudaBackend::allocate(DType dtype, std::initializer_list<int64_t> dims) {
  Allocation a;
  a.tensor = Tensor(nullptr, dtype, dims, Device::kCuda);
  void* p = nullptr;
  FG_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(a.tensor.nbytes(), 1)));
  // cudaFree waits for the device, so memory is never freed under a running kernel.
  a.memory = std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
  a.tensor.data = p;
  FG_CUDA_CHECK(cudaMemsetAsync(p, 0, a.tensor.nbytes(), stream_));
  return a;
}

void CudaBackend::copy_from_host(const Tensor& dst, const void* src) {
  cuda::require_device(dst, "copy_from_host destination");
  if (dst.nbytes() == 0) return;
  // From pageable memory the copy is staged before this returns, so `src` may go right away.
  FG_CUDA_CHECK(cudaMemcpyAsync(dst.data, src, dst.nbytes(), cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::copy_to_host(void* dst, const Tensor& src) {
  cuda::require_device(src, "copy_to_host source");
  if (src.nbytes() == 0) return;
  FG_CUDA_CHECK(cudaMemcpyAsync(dst, src.data, src.nbytes(), cudaMemcpyDeviceToHost, stream_));
  FG_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::synchronize() { FG_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Allocation CudaBackend::allocate_staging(size_t bytes) {
  Allocation a;
  a.tensor = Tensor(nullptr, DType::kI32, {static_cast<int64_t>((bytes + 3) / 4)}, Device::kHost);
  void* p = nullptr;
  FG_CUDA_CHECK(cudaMallocHost(&p, std::max<size_t>(a.tensor.nbytes(), 1)));
  a.memory = std::shared_ptr<void>(p, [](void* q) { cudaFreeHost(q); });
  a.tensor.data = p;
  return a;
}

void CudaBackend::begin_capture() {
  FG_CHECK(!capturing_, "cuda backend: a capture is already in progress");
  FG_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  capturing_ = true;
}

std::unique_ptr<Graph> CudaBackend::end_capture() {
  FG_CHECK(capturing_, "cuda backend: end_capture without begin_capture");
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  FG_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  // What instantiation takes from the device is the graph's own memory (its nodes and launch
  // state); activations and workspaces are shared buffers allocated before any capture.
  size_t free_before = 0, free_after = 0, total = 0;
  FG_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  FG_CUDA_CHECK(status);
  FG_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  if (free_before > free_after) graph_memory_bytes_ += free_before - free_after;
  return std::make_unique<CudaGraph>(exec, stream_);
}

const AttentionBackend& CudaBackend::require_attention() const {
  FG_CHECK(attention_ != nullptr,
           "cuda backend: no attention backend set (CudaBackend::set_attention, once the model config is known)");
  return *attention_;
}

GraphSupport CudaBackend::attention_graph_support() const { return require_attention().graph_support(); }

const PaddingContract& CudaBackend::attention_contract() const { return require_attention().contract(); }

void CudaBackend::embedding(const Tensor& ids, const Tensor& table, const Tensor& out) {
  require(ids, DType::kI32, "embedding ids");
  require_weight(table, "embedding table");
  require(out, DType::kBF16, "embedding output");
  FG_CHECK(ids.rank == 1 && table.rank == 2 && out.same_shape({ids.dim(0), table.dim(1)}),
           "cuda backend: embedding of ids {} in table {} into {}", ids.shape_string(), table.shape_string(),
           out.shape_string());
  FG_CHECK(table.dim(1) % 8 == 0, "cuda backend: embedding needs a hidden size that is a multiple of 8, got {}",
           table.dim(1));
  require_aligned16(table, "embedding table");
  require_aligned16(out, "embedding output");
  cuda::launch_gather_rows(table.data, ids.as<const int32_t>(), out.data, ids.dim(0), table.dim(0),
                           table.dim(1) * 2, stream_);
}

void CudaBackend::gather_rows(const Tensor& x, const Tensor& indices, const Tensor& out) {
  require(indices, DType::kI32, "gather_rows indices");
  cuda::require_device(x, "gather_rows input");
  cuda::require_device(out, "gather_rows output");
  FG_CHECK(x.dtype == out.dtype && indices.rank == 1 && out.rank >= 1 && out.dim(0) == indices.dim(0) &&
               out.row_numel() == x.row_numel(),
           "cuda backend: gather_rows of {} {} by indices {} into {} {}", dtype_name(x.dtype), x.shape_string(),
           indices.shape_string(), dtype_name(out.dtype), out.shape_string());
  const int64_t row_bytes = x.row_numel() * static_cast<int64_t>(dtype_size(x.dtype));
  FG_CHECK(row_bytes % 16 == 0, "cuda backend: gather_rows needs rows of a multiple of 16 bytes, got {}", row_bytes);
  require_aligned16(x, "gather_rows input");
  require_aligned16(out, "gather_rows output");
  cuda::launch_gather_rows(x.data, indices.as<const int32_t>(), out.data, indices.dim(0), x.dim(0), row_bytes,
                           stream_);
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  check_row_norm(x, weight, out, "rms_norm");
  cuda::launch_rms_norm(bf16_ptr(x), bf16_ptr(weight), eps, bf16_ptr(out), x.dim(0), x.dim(1), stream_);
}

void CudaBackend::add_rms_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                               const Tensor& out) {
  check_row_norm(x, weight, out, "add_rms_norm");
  require(residual, DType::kBF16, "add_rms_norm residual");
  FG_CHECK(residual.same_shape({x.dim(0), x.dim(1)}), "cuda backend: add_rms_norm residual {} for input {}",
           residual.shape_string(), x.shape_string());
  require_aligned16(residual, "add_rms_norm residual");
  cuda::launch_add_rms_norm(bf16_ptr(residual), bf16_ptr(x), bf16_ptr(weight), eps, bf16_ptr(out), x.dim(0),
                            x.dim(1), stream_);
}

void CudaBackend::check_head_norm_weight(const Tensor& weight) const {
  require_weight(weight, "head_rms_norm weight");
  const int64_t head_dim = weight.numel();
  const int64_t group = head_dim / 8;
  FG_CHECK(head_dim % 8 == 0 && group >= 1 && group <= 32 && (group & (group - 1)) == 0,
           "cuda backend: head_rms_norm supports head_dim 8 * 2^k up to 256, got {}", head_dim);
  require_aligned16(weight, "head_rms_norm weight");
}

void CudaBackend::head_rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  require(x, DType::kBF16, "head_rms_norm input");
  check_head_norm_weight(weight);
  const int64_t head_dim = weight.numel();
  FG_CHECK(x.numel() % head_dim == 0, "cuda backend: head_rms_norm input {} is not made of heads of {}",
           x.shape_string(), head_dim);
  require_aligned16(x, "head_rms_norm input");
  cuda::launch_head_rms_norm(bf16_ptr(x), bf16_ptr(weight), eps, x.numel() / head_dim, head_dim, stream_);
}

void CudaBackend::qk_norm_rope_cache_write(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                           const Tensor& k_norm, float eps, const Tensor& positions,
                                           const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                           const KvCacheLayer& cache) {
  if (q.rank != 2 || !in_small_n_bucket(q.dim(0))) {
    Backend::qk_norm_rope_cache_write(q, k, v, q_norm, k_norm, eps, positions, slot_mapping, rope_cos_sin, cache);
    return;
  }
  const RopeShape r = check_rope_inputs(q, k, v, positions, slot_mapping, rope_cos_sin, cache);
  check_head_norm_weight(q_norm);
  check_head_norm_weight(k_norm);
  FG_CHECK(q_norm.numel() == r.head_dim && k_norm.numel() == r.head_dim,
           "cuda backend: q/k norm weights {} and {} for heads of {}", q_norm.shape_string(), k_norm.shape_string(),
           r.head_dim);
  cuda::launch_qk_norm_rope_and_cache_write(bf16_ptr(q), bf16_ptr(k), bf16_ptr(v), bf16_ptr(q_norm), bf16_ptr(k_norm),
                                            eps, positions.as<const int32_t>(), slot_mapping.as<const int64_t>(),
                                            rope_cos_sin.as<const float>(), kv_cache_write(cache, r), r.n,
                                            static_cast<int>(r.heads), static_cast<int>(r.kv_heads),
                                            static_cast<int>(r.head_dim), r.max_positions, stream_);
}

CudaBackend::RopeShape CudaBackend::check_rope_inputs(const Tensor& q, const Tensor& k, const Tensor& v,
                                                      const Tensor& positions, const Tensor& slot_mapping,
                                                      const Tensor& rope_cos_sin, const KvCacheLayer& cache) const {
  require(q, DType::kBF16, "rope q");
  require(k, DType::kBF16, "rope k");
  require(v, DType::kBF16, "rope v");
  require(positions, DType::kI32, "positions");
  require(slot_mapping, DType::kI64, "slot_mapping");
  require(rope_cos_sin, DType::kF32, "rope cos/sin table");
  const DType cache_dtype = cache.k.dtype == DType::kF8E4M3 ? DType::kF8E4M3 : DType::kBF16;
  require(cache.k, cache_dtype, "k cache");
  require(cache.v, cache_dtype, "v cache");
  FG_CHECK(cache_dtype == DType::kBF16 || (cache.k_scale > 0.0f && cache.v_scale > 0.0f),
           "cuda backend: an FP8 KV cache needs positive scales, got k {} and v {}", cache.k_scale, cache.v_scale);
  FG_CHECK(cache.k.rank == 4 && cache.v.rank == 4 && cache.k.same_shape({cache.v.dim(0), cache.v.dim(1),
                                                                           cache.v.dim(2), cache.v.dim(3)}),
           "cuda backend: k cache {} and v cache {} must be [num_blocks, block_size, nkv, hd]",
           cache.k.shape_string(), cache.v.shape_string());
  const int64_t n = q.dim(0), nkv = cache.k.dim(2), hd = cache.k.dim(3);
  FG_CHECK(hd % 16 == 0, "cuda backend: RoPE needs a head_dim that is a multiple of 16, got {}", hd);
  FG_CHECK(q.rank == 2 && q.dim(1) % hd == 0 && k.same_shape({n, nkv * hd}) && v.same_shape({n, nkv * hd}),
           "cuda backend: rope of q {}, k {}, v {} for a cache of {} heads of {}", q.shape_string(),
           k.shape_string(), v.shape_string(), nkv, hd);
  FG_CHECK(rope_cos_sin.rank == 2 && rope_cos_sin.dim(1) == hd, "cuda backend: RoPE table {} for head_dim {}",
           rope_cos_sin.shape_string(), hd);
  FG_CHECK(positions.dim(0) >= n && slot_mapping.dim(0) >= n,
           "cuda backend: rope of {} tokens with {} positions and {} slots", n, positions.dim(0),
           slot_mapping.dim(0));
  for (const auto& [t, what] : {std::pair{&q, "rope q"}, {&k, "rope k"}, {&v, "rope v"},
                                {&rope_cos_sin, "rope table"}, {&cache.k, "k cache"}, {&cache.v, "v cache"}})
    require_aligned16(*t, what);
  return {n, q.dim(1) / hd, nkv, hd, rope_cos_sin.dim(0), cache.k.dim(0) * cache.k.dim(1)};
}

void CudaBackend::rope_and_cache_write(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                                       const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                       const KvCacheLayer& cache) {
  const RopeShape r = check_rope_inputs(q, k, v, positions, slot_mapping, rope_cos_sin, cache);
  const cuda::RopeSource in_place =
      cuda::RopeSource::in_place(bf16_ptr(q), bf16_ptr(k), bf16_ptr(v), q.dim(1), k.dim(1));
  cuda::launch_rope_and_cache_write(in_place, bf16_ptr(q), bf16_ptr(k), bf16_ptr(v), positions.as<const int32_t>(),
                                    slot_mapping.as<const int64_t>(), rope_cos_sin.as<const float>(),
                                    kv_cache_write(cache, r), r.n, static_cast<int>(r.heads),
                                    static_cast<int>(r.kv_heads), static_cast<int>(r.head_dim), r.max_positions,
                                    stream_);
}

void CudaBackend::attention(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                            const Tensor& out) {
  require_attention();
  attention_->run(q, cache, meta, scale, out, stream_);
}

void CudaBackend::silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) {
  require(gate, DType::kBF16, "silu_mul gate");
  require(up, DType::kBF16, "silu_mul up");
  require(out, DType::kBF16, "silu_mul output");
  FG_CHECK(gate.numel() == up.numel() && gate.numel() == out.numel(),
           "cuda backend: silu_mul of gate {} and up {} into {}", gate.shape_string(), up.shape_string(),
           out.shape_string());
  FG_CHECK(gate.numel() % 8 == 0, "cuda backend: silu_mul needs a multiple of 8 elements, got {}", gate.numel());
  require_aligned16(gate, "silu_mul gate");
  require_aligned16(up, "silu_mul up");
  require_aligned16(out, "silu_mul output");
  cuda::launch_silu_mul(bf16_ptr(gate), bf16_ptr(up), bf16_ptr(out), gate.numel(), stream_);
}

void CudaBackend::add(const Tensor& residual, const Tensor& x) {
  require(residual, DType::kBF16, "add residual");
  require(x, DType::kBF16, "add input");
  FG_CHECK(x.rank == 2 && residual.same_shape({x.dim(0), x.dim(1)}), "cuda backend: add of {} to residual {}",
           x.shape_string(), residual.shape_string());
  FG_CHECK(x.numel() % 8 == 0, "cuda backend: add needs a multiple of 8 elements, got {}", x.numel());
  require_aligned16(residual, "add residual");
  require_aligned16(x, "add input");
  cuda::launch_add(bf16_ptr(residual), bf16_ptr(x), x.numel(), stream_);
}

void CudaBackend::sample(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids) {
  // The sampler works in shared memory and needs no workspace; should that change, its launcher
  // says so, and the workspace belongs in this backend, allocated once.
  cuda::launch_sampling(logits, params, out_ids, nullptr, 0, stream_);
}

}  // namespace fg
