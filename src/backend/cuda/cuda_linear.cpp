// backend/cuda/cuda_linear.cpp — CudaBackend's linears (linear, linear_group, linear_silu_mul, and
// the residual-stream ops that fuse a norm or the residual add into them): argument checks, then a
// small-n kernel or cuBLASLt by the bucket rule (a pure function of n and the configured buckets,
// so an eager run of n rows uses the implementation and algorithm of the graph that holds n).
#include <algorithm>
#include <climits>

#include "backend/cuda/activation_kernels.h"
#include "backend/cuda/cublaslt_linear.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gather_kernels.h"
#include "backend/cuda/rope_kernels.h"
#include "backend/cuda/small_n_linear.h"
#include "backend/cuda/streamed_linear.h"
#include "core/cuda/tensor_checks.h"

namespace fg {

namespace {

void check_linear(const Tensor& x, const Tensor& weight, const Tensor* bias, const Tensor& out) {
  cuda::require(x, DType::kBF16, "linear input");
  cuda::require_weight(weight, "linear weight");
  cuda::require_device(out, "linear output");
  FG_CHECK(out.dtype == DType::kBF16 || out.dtype == DType::kF32,
           "cuda backend: linear output must be BF16 or F32, got {}", dtype_name(out.dtype));
  FG_CHECK(x.rank == 2 && weight.rank == 2 && weight.dim(1) == x.dim(1) && out.same_shape({x.dim(0), weight.dim(0)}),
           "cuda backend: linear of input {} with weight {} into {}", x.shape_string(), weight.shape_string(),
           out.shape_string());
  const int64_t n = x.dim(0), in = x.dim(1), out_features = weight.dim(0);
  FG_CHECK(in % 8 == 0, "cuda backend: linear needs an input width that is a multiple of 8, got {} (weight {})", in,
           weight.shape_string());
  FG_CHECK(in <= INT32_MAX && out_features <= INT32_MAX && n <= INT32_MAX, "cuda backend: linear {} x {} is too large",
           x.shape_string(), weight.shape_string());
  if (bias != nullptr && bias->data != nullptr) {
    cuda::require_weight(*bias, "linear bias");
    FG_CHECK(bias->numel() == out_features, "cuda backend: linear bias {} for {} outputs", bias->shape_string(),
             out_features);
    cuda::require_aligned16(*bias, "linear bias");
  }
  cuda::require_aligned16(x, "linear input");
  cuda::require_aligned16(weight, "linear weight");
  cuda::require_aligned16(out, "linear output");
}

bool has_data(const Tensor* t) { return t != nullptr && t->data != nullptr; }


// Whether a group's parts can run as one matmul: at most LinearOutputs::kMaxParts of them, weights
// of one width back to back, biases all absent or back to back, outputs of one dtype.
bool fusable(const std::vector<LinearPart>& parts) {
  if (parts.empty() || parts.size() > static_cast<size_t>(cuda::LinearOutputs::kMaxParts)) return false;
  const bool biased = has_data(parts[0].bias);
  for (size_t p = 0; p < parts.size(); ++p) {
    const LinearPart& part = parts[p];
    if (part.weight->rank != 2 || has_data(part.bias) != biased || part.out.dtype != parts[0].out.dtype) return false;
    if (p == 0) continue;
    const LinearPart& before = parts[p - 1];
    if (part.weight->dim(1) != before.weight->dim(1) || !cuda::follows(*before.weight, *part.weight)) return false;
    if (biased && !cuda::follows(*before.bias, *part.bias)) return false;
  }
  return true;
}

void check_input_norm(const Tensor& x, const Tensor& norm_weight) {
  cuda::require_weight(norm_weight, "input norm weight");
  FG_CHECK(x.rank == 2 && norm_weight.numel() == x.dim(1), "cuda backend: a norm weight {} for input {}",
           norm_weight.shape_string(), x.shape_string());
  cuda::require_aligned16(norm_weight, "input norm weight");
}

// The parts of a fusable group as the columns of one matmul, each checked as its own linear;
// returns the outputs and sets `rows` to the columns in all.
cuda::LinearOutputs group_outputs(const Tensor& x, const std::vector<LinearPart>& parts, int64_t& rows) {
  for (const LinearPart& p : parts) check_linear(x, *p.weight, p.bias, p.out);
  return cuda::LinearOutputs::columns_of(parts, rows);
}

// The checks of the gated MLP half (linear_silu_mul) on any path but the default steps.
void check_gated(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                 const Tensor& up_out, const Tensor& out) {
  check_linear(x, gate, nullptr, gate_out);  // the checks of the plain path, for the same inputs
  check_linear(x, up, nullptr, up_out);
  cuda::require(out, DType::kBF16, "linear_silu_mul output");
  FG_CHECK(out.same_shape({x.dim(0), gate.dim(0)}), "cuda backend: linear_silu_mul of input {} with gate {} into {}",
           x.shape_string(), gate.shape_string(), out.shape_string());
  cuda::require_aligned16(out, "linear_silu_mul output");
}

}  // namespace

void CudaBackend::linear(const Tensor& x, const Tensor& weight, const Tensor* bias, const Tensor& out) {
  linear_with(LinearPath::kAuto, x, weight, bias, out);
}

void CudaBackend::linear_with(LinearPath path, const Tensor& x, const Tensor& weight, const Tensor* bias,
                              const Tensor& out) {
  check_linear(x, weight, bias, out);
  if (x.dim(0) == 0) return;
  const void* bias_data = has_data(bias) ? bias->data : nullptr;
  if (runs_cublaslt(path, x.dim(0))) {
    gemm_->run(x.data, weight.data, bias_data, out.data, out.dtype == DType::kF32, x.dim(0), x.dim(1), weight.dim(0),
               buckets_.of(x.dim(0)), stream_);
    return;
  }
  run_small_n(path, x, weight.data, bias_data, cuda::LinearOutputs::whole(out.data, weight.dim(0)), weight.dim(0),
              out.dtype);
}

void CudaBackend::linear_group(const Tensor& x, const std::vector<LinearPart>& parts) {
  if (!fusable(parts)) {
    Backend::linear_group(x, parts);
    return;
  }
  int64_t rows = 0;
  const cuda::LinearOutputs outputs = group_outputs(x, parts, rows);
  if (x.dim(0) == 0) return;
  if (runs_cublaslt(LinearPath::kAuto, x.dim(0))) {  // the parts apart, each its own GEMM
    for (const LinearPart& part : parts) linear_with(LinearPath::kCublasLt, x, *part.weight, part.bias, part.out);
    return;
  }
  // The parts' weights (and biases) as one [rows, in] matrix (and [rows] vector): they lie back to back.
  run_small_n(LinearPath::kAuto, x, parts[0].weight->data, has_data(parts[0].bias) ? parts[0].bias->data : nullptr,
              outputs, rows, parts[0].out.dtype);
}

void CudaBackend::linear_silu_mul(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                                  const Tensor& up_out, const Tensor& out) {
  if (runs_gated(x.dim(0), gate, up)) {
    run_gated(x, gate, up, gate_out, up_out, out, cuda::InputNorm{});
    return;
  }
  if (runs_gate_up_span(x.dim(0), gate, up, gate_out, up_out)) {
    run_gate_up_span(x, gate, up, gate_out, up_out, out);
    return;
  }
  Backend::linear_silu_mul(x, gate, up, gate_out, up_out, out);
}

void CudaBackend::rms_norm_linear_silu_mul(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                                           const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                                           const Tensor& up_out, const Tensor& out) {
  if (!runs_gated(x.dim(0), gate, up)) {
    Backend::rms_norm_linear_silu_mul(x, norm_weight, eps, normed, gate, up, gate_out, up_out, out);
    return;
  }
  check_input_norm(x, norm_weight);
  run_gated(x, gate, up, gate_out, up_out, out, {static_cast<const __nv_bfloat16*>(norm_weight.data), eps});
}

void CudaBackend::rms_norm_linear_group(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                                        const Tensor& span, const std::vector<LinearPart>& parts) {
  const int64_t n = x.rank == 2 ? x.dim(0) : 0;  // any other rank fails the default steps' checks
  if (x.rank == 2 && runs_span(n, span, parts)) {
    check_input_norm(x, norm_weight);
    int64_t rows = 0;
    const cuda::LinearOutputs outputs = group_outputs(x, parts, rows);
    if (n == 0) return;
    rms_norm(x, norm_weight, eps, normed);
    run_span_gemm(normed, span, parts);
    cuda::launch_split_columns(span.data, n, outputs, stream_);
    return;
  }
  int64_t rows = 0;
  for (const LinearPart& part : parts) rows += part.weight->rank == 2 ? part.weight->dim(0) : 0;
  const bool fused = x.rank == 2 && fuses_small_n(n) && fusable(parts) && parts[0].out.dtype == DType::kBF16 &&
                     parts[0].weight->rank == 2 && takes_input_norm(rows, parts[0].weight->dim(1));
  if (!fused) {
    Backend::rms_norm_linear_group(x, norm_weight, eps, normed, span, parts);
    return;
  }
  check_input_norm(x, norm_weight);
  const cuda::LinearOutputs outputs = group_outputs(x, parts, rows);
  if (n == 0) return;
  const auto* x16 = static_cast<const __nv_bfloat16*>(x.data);
  const auto* w16 = static_cast<const __nv_bfloat16*>(parts[0].weight->data);
  const auto* b16 = static_cast<const __nv_bfloat16*>(has_data(parts[0].bias) ? parts[0].bias->data : nullptr);
  const cuda::InputNorm norm{static_cast<const __nv_bfloat16*>(norm_weight.data), eps};
  cuda::launch_small_n_linear_normed(x16, norm, w16, b16, outputs, n, x.dim(1), rows,
                                     cuda::small_n_linear_warps(rows, sm_count_), stream_);
}

bool CudaBackend::fuses_qkv_rope(int64_t n, const std::vector<LinearPart>& qkv) const {
  if (qkv.size() != 3 || !fuses_small_n(n) || !fusable(qkv) || qkv[0].out.dtype != DType::kBF16) return false;
  int64_t rows = 0;
  for (const LinearPart& part : qkv) rows += part.weight->dim(0);
  const int64_t in = qkv[0].weight->dim(1);
  // The direct kernel with its input norm, or the streamed one after the norm kernel (its head
  // conditions hold for any q/k/v that rope_and_cache_write takes).
  return takes_input_norm(rows, in) || cuda::streams_unsplit(rows, in, sm_count_);
}

void CudaBackend::rms_norm_qkv_rope_cache_write(const Tensor& x, const Tensor& norm_weight, float eps,
                                                const Tensor& normed, const Tensor& span,
                                                const std::vector<LinearPart>& qkv, const Tensor& positions,
                                                const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                                const KvCacheLayer& cache) {
  if (x.rank == 2 && qkv.size() == 3 && runs_span(x.dim(0), span, qkv)) {
    run_qkv_span(x, norm_weight, eps, normed, span, qkv, positions, slot_mapping, rope_cos_sin, cache);
    return;
  }
  // The fused stores write BF16 caches only; an FP8 cache is written by rope_and_cache_write.
  if (x.rank != 2 || cache.k.dtype != DType::kBF16 || !fuses_qkv_rope(x.dim(0), qkv)) {
    Backend::rms_norm_qkv_rope_cache_write(x, norm_weight, eps, normed, span, qkv, positions, slot_mapping,
                                           rope_cos_sin, cache);
    return;
  }
  check_input_norm(x, norm_weight);
  int64_t rows = 0;
  const cuda::LinearOutputs outputs = group_outputs(x, qkv, rows);
  const RopeShape r =
      check_rope_inputs(qkv[0].out, qkv[1].out, qkv[2].out, positions, slot_mapping, rope_cos_sin, cache);
  const cuda::QkvRope rope = qkv_rope(r, positions, slot_mapping, rope_cos_sin, cache);
  const int64_t n = x.dim(0);
  if (n == 0) return;
  const auto* w16 = static_cast<const __nv_bfloat16*>(qkv[0].weight->data);
  const auto* b16 = static_cast<const __nv_bfloat16*>(has_data(qkv[0].bias) ? qkv[0].bias->data : nullptr);
  if (takes_input_norm(rows, x.dim(1))) {
    cuda::launch_small_n_qkv_rope(static_cast<const __nv_bfloat16*>(x.data),
                                  {static_cast<const __nv_bfloat16*>(norm_weight.data), eps}, w16, b16, outputs, rope,
                                  n, x.dim(1), rows, cuda::small_n_linear_warps(rows, sm_count_), stream_);
    return;
  }
  rms_norm(x, norm_weight, eps, normed);
  streamed_->run_qkv_rope(static_cast<const __nv_bfloat16*>(normed.data), w16, b16, outputs, rope, n, x.dim(1), rows,
                          stream_);
}

cuda::QkvRope CudaBackend::qkv_rope(const RopeShape& r, const Tensor& positions, const Tensor& slot_mapping,
                                    const Tensor& rope_cos_sin, const KvCacheLayer& cache) {
  FG_CHECK(r.max_positions <= INT32_MAX, "cuda backend: a RoPE table of {} positions is too large", r.max_positions);
  cuda::QkvRope rope;
  rope.positions = positions.as<const int32_t>();
  rope.slot_mapping = slot_mapping.as<const int64_t>();
  rope.cos_sin = rope_cos_sin.as<const float>();
  rope.k_cache = static_cast<__nv_bfloat16*>(cache.k.data);
  rope.v_cache = static_cast<__nv_bfloat16*>(cache.v.data);
  rope.head_dim = static_cast<int>(r.head_dim);
  rope.max_positions = static_cast<int>(r.max_positions);
  rope.num_slots = r.slots;
  return rope;
}

bool CudaBackend::runs_span(int64_t n, const Tensor& span, const std::vector<LinearPart>& parts) const {
  if (!runs_cublaslt(LinearPath::kAuto, n) || !fusable(parts) || parts[0].out.dtype != DType::kBF16) return false;
  int64_t rows = 0;
  for (const LinearPart& part : parts) {
    if (part.weight->dim(0) % 8 != 0) return false;  // the column split copies 16-byte vectors
    rows += part.weight->dim(0);
  }
  if (span.data == nullptr || span.dtype != DType::kBF16 || !span.same_shape({n, rows})) return false;
  // Apart from the parts' outputs: they are written from the span's columns.
  const char* begin = static_cast<const char*>(span.data);
  const char* end = begin + span.nbytes();
  return std::none_of(parts.begin(), parts.end(), [&](const LinearPart& part) {
    const char* out = static_cast<const char*>(part.out.data);
    return out < end && begin < out + part.out.nbytes();
  });
}

void CudaBackend::run_span_gemm(const Tensor& x, const Tensor& span, const std::vector<LinearPart>& parts) {
  cuda::require_device(span, "linear span");
  cuda::require_aligned16(span, "linear span");
  gemm_->run(x.data, parts[0].weight->data, has_data(parts[0].bias) ? parts[0].bias->data : nullptr, span.data, false,
             x.dim(0), x.dim(1), span.dim(1), buckets_.of(x.dim(0)), stream_);
}

void CudaBackend::run_qkv_span(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                               const Tensor& span, const std::vector<LinearPart>& qkv, const Tensor& positions,
                               const Tensor& slot_mapping, const Tensor& rope_cos_sin, const KvCacheLayer& cache) {
  check_input_norm(x, norm_weight);
  int64_t rows = 0;
  (void)group_outputs(x, qkv, rows);  // each part checked as its own linear
  const Tensor &q = qkv[0].out, &k = qkv[1].out, &v = qkv[2].out;
  const RopeShape r = check_rope_inputs(q, k, v, positions, slot_mapping, rope_cos_sin, cache);
  const int64_t n = x.dim(0);
  if (n == 0) return;
  rms_norm(x, norm_weight, eps, normed);
  run_span_gemm(normed, span, qkv);
  cuda::launch_rope_and_cache_write(cuda::RopeSource::span(cuda::bf16_ptr(span), q.dim(1), k.dim(1)), cuda::bf16_ptr(q),
                                    cuda::bf16_ptr(k), cuda::bf16_ptr(v), positions.as<const int32_t>(),
                                    slot_mapping.as<const int64_t>(), rope_cos_sin.as<const float>(),
                                    kv_cache_write(cache, r), n, static_cast<int>(r.heads),
                                    static_cast<int>(r.kv_heads), static_cast<int>(r.head_dim), r.max_positions,
                                    stream_);
}

void CudaBackend::linear_residual_add(const Tensor& x, const Tensor& weight, const Tensor& out,
                                      const Tensor& residual) {
  (void)out;  // scratch of the default steps: the add happens in the matmul's store (or GEMM) here
  check_linear(x, weight, nullptr, residual);
  cuda::require(residual, DType::kBF16, "residual");
  const int64_t n = x.dim(0);
  if (n == 0) return;
  if (runs_cublaslt(LinearPath::kAuto, n)) {
    gemm_->run(x.data, weight.data, nullptr, residual.data, false, n, x.dim(1), weight.dim(0), buckets_.of(n),
               stream_, /*add_to_out=*/true);
    return;
  }
  cuda::LinearOutputs outputs = cuda::LinearOutputs::whole(residual.data, weight.dim(0));
  outputs.add_to_output = true;
  run_small_n(LinearPath::kAuto, x, weight.data, nullptr, outputs, weight.dim(0), DType::kBF16);
}

// Every n of a bucket whose top is at most kSmallNMaxRows runs the small-n kernel, the others
// cuBLASLt: a pure function of the bucket, as graph == eager needs.
bool CudaBackend::in_small_n_bucket(int64_t n) const { return buckets_.of(n).hi <= cuda::kSmallNMaxRows; }

bool CudaBackend::fuses_small_n(int64_t n) const {
  // Batch-invariant mode runs every n through the small-n path in groups of 16 rows; the
  // unfused steps keep that simple.
  return !batch_invariant_ && in_small_n_bucket(n);
}

bool CudaBackend::takes_input_norm(int64_t out_features, int64_t in) const {
  // The direct kernel's register path. The plain streamed kernel could (as the gated one does),
  // but it measured no better than the norm kernel it saves: the 8B q/k/v span took ~2 us more
  // with the norm inside (15.0 -> 17.1 us at M = 1), and down_proj then the span, as a pair, 0.2 us
  // more than the three launches it replaced; with a norm kernel between them instead, the pair
  // is 0.7 us faster than those (bench/RESULTS.md, 2026-12-01).
  return !cuda::prefers_streamed_linear(out_features, in, sm_count_) &&
         cuda::small_n_linear_takes_norm(out_features, sm_count_);
}

bool CudaBackend::runs_gated(int64_t n, const Tensor& gate, const Tensor& up) const {
  return fuses_small_n(n) && gate.rank == 2 && up.same_shape({gate.dim(0), gate.dim(1)}) &&
         cuda::follows(gate, up) &&
         cuda::gated_linear_applies(gate.dim(0), gate.dim(1), sm_count_);
}

bool CudaBackend::runs_gate_up_span(int64_t n, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                                    const Tensor& up_out) const {
  return runs_cublaslt(LinearPath::kAuto, n) && gate.rank == 2 && up.same_shape({gate.dim(0), gate.dim(1)}) &&
         gate.dim(0) % 8 == 0 && cuda::follows(gate, up) && gate_out.dtype == DType::kBF16 &&
         cuda::follows(gate_out, up_out);
}

void CudaBackend::run_gate_up_span(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                                   const Tensor& up_out, const Tensor& out) {
  const int64_t n = x.dim(0), intermediate = gate.dim(0);
  check_gated(x, gate, up, gate_out, up_out, out);
  if (n == 0) return;
  // gate_out and up_out, back to back, hold the span's [n, 2I] output: each row's gate then up.
  gemm_->run(x.data, gate.data, nullptr, gate_out.data, false, n, x.dim(1), 2 * intermediate, buckets_.of(n), stream_);
  const __nv_bfloat16* span = cuda::bf16_ptr(gate_out);
  cuda::launch_silu_mul_rows(span, span + intermediate, cuda::bf16_ptr(out), n, intermediate, 2 * intermediate,
                             stream_);
}

void CudaBackend::run_gated(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                            const Tensor& up_out, const Tensor& out, const cuda::InputNorm& norm) {
  const int64_t n = x.dim(0), intermediate = gate.dim(0);
  check_gated(x, gate, up, gate_out, up_out, out);
  if (n == 0) return;
  streamed_->run_gated(static_cast<const __nv_bfloat16*>(x.data), static_cast<const __nv_bfloat16*>(gate.data),
                       static_cast<__nv_bfloat16*>(out.data), n, x.dim(1), intermediate, stream_, 0, norm);
}

bool CudaBackend::runs_cublaslt(LinearPath path, int64_t n) const {
  if (path == LinearPath::kAuto) return !batch_invariant_ && !in_small_n_bucket(n);
  return path == LinearPath::kCublasLt;
}

void CudaBackend::run_small_n(LinearPath path, const Tensor& x, const void* weight, const void* bias,
                              const cuda::LinearOutputs& outputs, int64_t out_features, DType out_dtype) {
  const int64_t n = x.dim(0), in = x.dim(1);
  const bool out_f32 = out_dtype == DType::kF32;
  if (path == LinearPath::kAuto && batch_invariant_) {
    // The small-n kernels' arithmetic for a row depends on the weight's shape only (their n-side
    // fragments are independent rows), so groups of 16 rows give every row the same bits at any n.
    for (int64_t r = 0; r < n; r += cuda::kSmallNMaxRows) {
      launch_small_n(LinearPath::kSmallN, static_cast<const __nv_bfloat16*>(x.data) + r * in, weight, bias,
                     outputs.from_row(r, static_cast<int64_t>(dtype_size(out_dtype))), out_f32,
                     std::min(cuda::kSmallNMaxRows, n - r), in, out_features);
    }
    return;
  }
  if (path == LinearPath::kAuto) path = LinearPath::kSmallN;
  FG_CHECK(n <= cuda::kSmallNMaxRows, "cuda backend: the small-n linear takes at most {} rows, got {}",
           cuda::kSmallNMaxRows, n);
  launch_small_n(path, x.data, weight, bias, outputs, out_f32, n, in, out_features);
}

void CudaBackend::launch_small_n(LinearPath path, const void* x, const void* weight, const void* bias,
                                 const cuda::LinearOutputs& out, bool out_f32, int64_t n, int64_t in,
                                 int64_t out_features) {
  if (path == LinearPath::kSmallN)
    path = cuda::prefers_streamed_linear(out_features, in, sm_count_) ? LinearPath::kSmallNStreamed : LinearPath::kSmallNDirect;
  const auto* x16 = static_cast<const __nv_bfloat16*>(x);
  const auto* w16 = static_cast<const __nv_bfloat16*>(weight);
  const auto* b16 = static_cast<const __nv_bfloat16*>(bias);
  if (path == LinearPath::kSmallNStreamed)
    streamed_->run(x16, w16, b16, out, out_f32, n, in, out_features, stream_);
  else
    cuda::launch_small_n_linear(x16, w16, b16, out, out_f32, n, in, out_features,
                                cuda::small_n_linear_warps(out_features, sm_count_), stream_);
}

}  // namespace fg
