// backend/cuda/cuda_linear.cpp — CudaBackend's linear: argument checks, then a small-n kernel
// or cuBLASLt by the bucket rule (a pure function of n and the configured buckets, so an eager
// run of n rows uses the implementation and algorithm of the graph that holds n).
#include <algorithm>
#include <climits>

#include "backend/cuda/cublaslt_linear.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/small_n_linear.h"
#include "backend/cuda/streamed_linear.h"
#include "backend/cuda/tensor_checks.h"

namespace fg {

void CudaBackend::linear(const Tensor& x, const Tensor& weight, const Tensor* bias, const Tensor& out) {
  linear_with(LinearPath::kAuto, x, weight, bias, out);
}

void CudaBackend::linear_with(LinearPath path, const Tensor& x, const Tensor& weight, const Tensor* bias,
                              const Tensor& out) {
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
  const bool has_bias = bias != nullptr && bias->data != nullptr;
  if (has_bias) {
    cuda::require_weight(*bias, "linear bias");
    FG_CHECK(bias->numel() == out_features, "cuda backend: linear bias {} for {} outputs", bias->shape_string(),
             out_features);
    cuda::require_aligned16(*bias, "linear bias");
  }
  cuda::require_aligned16(x, "linear input");
  cuda::require_aligned16(weight, "linear weight");
  cuda::require_aligned16(out, "linear output");
  if (n == 0) return;

  const void* bias_data = has_bias ? bias->data : nullptr;
  const bool out_f32 = out.dtype == DType::kF32;
  if (path == LinearPath::kAuto && batch_invariant_) {
    // The small-n kernels' arithmetic for a row depends on the weight's shape only (their n-side
    // fragments are independent rows), so groups of 16 rows give every row the same bits at any n.
    const size_t out_row_bytes = static_cast<size_t>(out_features) * dtype_size(out.dtype);
    for (int64_t r = 0; r < n; r += cuda::kSmallNMaxRows) {
      launch_small_n(LinearPath::kSmallN, static_cast<const __nv_bfloat16*>(x.data) + r * in, weight.data, bias_data,
                     static_cast<char*>(out.data) + static_cast<size_t>(r) * out_row_bytes, out_f32,
                     std::min(cuda::kSmallNMaxRows, n - r), in, out_features);
    }
    return;
  }
  if (path == LinearPath::kAuto) path = buckets_->small_n(n) ? LinearPath::kSmallN : LinearPath::kCublasLt;
  if (path == LinearPath::kCublasLt) {
    gemm_->run(x.data, weight.data, bias_data, out.data, out_f32, n, in, out_features, buckets_->of(n), stream_);
    return;
  }
  FG_CHECK(n <= cuda::kSmallNMaxRows, "cuda backend: the small-n linear takes at most {} rows, got {}",
           cuda::kSmallNMaxRows, n);
  launch_small_n(path, x.data, weight.data, bias_data, out.data, out_f32, n, in, out_features);
}

void CudaBackend::launch_small_n(LinearPath path, const void* x, const void* weight, const void* bias, void* out,
                                 bool out_f32, int64_t n, int64_t in, int64_t out_features) {
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
