// backend/cuda/cublaslt_linear.cpp — cuBLASLt descriptors and per-bucket algorithm plans.
//
// cuBLASLt is column-major. Our row-major out[n, out] = x[n, in] · W[out, in]ᵀ is, read
// column-major, D[out, n] = op(A) · B with A = W seen as [in, out] (op = transpose) and B = x seen
// as [in, n]: no copies, the weight is the "m" side and the tokens the "n" side.
#include "backend/cuda/cublaslt_linear.h"

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cublas_check.h"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/small_n_linear.h"
#include "core/error.h"

namespace fg::cuda {

namespace {

// Descriptors of one matmul in caller-owned storage (cuBLASLt's *Init functions), so that running
// a planned matmul allocates nothing on the host either.
struct Descriptors {
  cublasLtMatmulDescOpaque_t op;
  cublasLtMatrixLayoutOpaque_t a, b, d;

  Descriptors(int64_t n, int64_t in, int64_t out_features, bool out_f32, bool bias_epilogue, bool fp8) {
    FG_CUBLAS_CHECK(cublasLtMatmulDescInit(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
    FG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)));
    FG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)));
    if (bias_epilogue) {
      const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;  // bias type = D's type (BF16) by default
      FG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    }
    const cudaDataType_t input = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    FG_CUBLAS_CHECK(cublasLtMatrixLayoutInit(&a, input, static_cast<uint64_t>(in), static_cast<uint64_t>(out_features),
                                             in));
    FG_CUBLAS_CHECK(cublasLtMatrixLayoutInit(&b, input, static_cast<uint64_t>(in), static_cast<uint64_t>(n), in));
    FG_CUBLAS_CHECK(cublasLtMatrixLayoutInit(&d, out_f32 ? CUDA_R_32F : CUDA_R_16BF,
                                             static_cast<uint64_t>(out_features), static_cast<uint64_t>(n),
                                             out_features));
  }
  void set_bias(const void* bias) {
    FG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }

};

}  // namespace

CublasLtLinear::CublasLtLinear(size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  FG_CUBLAS_CHECK(cublasLtCreate(&handle_));
  FG_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

CublasLtLinear::~CublasLtLinear() {
  // Destructors must not throw; a failure here leaks at worst.
  if (handle_ != nullptr) cublasLtDestroy(handle_);
  if (workspace_ != nullptr) cudaFree(workspace_);
}

const cublasLtMatmulAlgo_t& CublasLtLinear::plan(const Key& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second;
  const auto [out_features, in, top, bottom, out_f32, bias_epilogue, fp8] = key;

  // Pointers are 16-byte aligned (the backend checks); cuBLASLt would otherwise assume 256.
  cublasLtMatmulPreferenceOpaque_t pref;
  FG_CUBLAS_CHECK(cublasLtMatmulPreferenceInit(&pref));
  FG_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &workspace_bytes_, sizeof(workspace_bytes_)));
  const uint32_t alignment = 16;
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    FG_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(&pref, attr, &alignment, sizeof(alignment)));

  // Heuristics for the bucket's top; the first candidate that also runs the bucket's bottom wins.
  // The heuristic infers the bias's alignment from its pointer without reading it: show it an
  // address aligned to exactly the 16 bytes the backend guarantees.
  Descriptors at_top(top, in, out_features, out_f32, bias_epilogue, fp8);
  Descriptors at_bottom(bottom, in, out_features, out_f32, bias_epilogue, fp8);
  if (bias_epilogue) {
    const void* sixteen_aligned = reinterpret_cast<const void*>(uintptr_t{16});
    at_top.set_bias(sixteen_aligned);
    at_bottom.set_bias(sixteen_aligned);
  }
  constexpr int kCandidates = 8;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int count = 0;
  FG_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, &at_top.op, &at_top.a, &at_top.b, &at_top.d, &at_top.d,
                                                 &pref, kCandidates, results, &count));
  for (int i = 0; i < count; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS || results[i].workspaceSize > workspace_bytes_) continue;
    cublasLtMatmulHeuristicResult_t check = {};
    if (cublasLtMatmulAlgoCheck(handle_, &at_bottom.op, &at_bottom.a, &at_bottom.b, &at_bottom.d, &at_bottom.d,
                                &results[i].algo, &check) != CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize > workspace_bytes_)
      continue;
    return plans_.emplace(key, results[i].algo).first->second;
  }
  fail("cuBLASLt offers no algorithm for a{} linear of n in [{}, {}] rows of {} inputs to {} {} outputs{}",
       fp8 ? "n FP8" : "", bottom, top, in, out_features, out_f32 ? "F32" : "BF16", bias_epilogue ? " with bias" : "");
}

void CublasLtLinear::run(const void* x, const void* w, const void* bias, void* out, bool out_f32, int64_t n,
                         int64_t in, int64_t out_features, SizeBuckets::Bucket bucket, cudaStream_t stream,
                         bool add_to_out) {
  if (n == 0 || out_features == 0) return;
  FG_ASSERT(n >= bucket.lo && n <= bucket.hi);
  // cuBLASLt's bias epilogue takes the bias in D's type; for F32 output the bias (BF16) is added
  // by a kernel of ours right after, which is the same fp32 add.
  const bool bias_epilogue = bias != nullptr && !out_f32;
  const cublasLtMatmulAlgo_t& algo = plan({out_features, in, bucket.hi, bucket.lo, out_f32, bias_epilogue, false});
  Descriptors desc(n, in, out_features, out_f32, bias_epilogue, false);
  if (bias_epilogue) desc.set_bias(bias);
  FG_ASSERT(!add_to_out || bias == nullptr);  // the bias would be added after the sum
  const float alpha = 1.0f, beta = add_to_out ? 1.0f : 0.0f;  // C is `out` itself
  FG_CUBLAS_CHECK(cublasLtMatmul(handle_, &desc.op, &alpha, w, &desc.a, x, &desc.b, &beta, out, &desc.d, out,
                                 &desc.d, &algo, workspace_, workspace_bytes_, stream));
  if (bias != nullptr && out_f32)
    launch_add_bias_f32(static_cast<float*>(out), static_cast<const __nv_bfloat16*>(bias), n, out_features, stream);
}

void CublasLtLinear::run_fp8(const void* x, const void* w, void* sums, int64_t n, int64_t in, int64_t out_features,
                             SizeBuckets::Bucket bucket, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  FG_ASSERT(n >= bucket.lo && n <= bucket.hi);
  const cublasLtMatmulAlgo_t& algo = plan({out_features, in, bucket.hi, bucket.lo, false, false, true});
  Descriptors desc(n, in, out_features, false, false, true);
  const float alpha = 1.0f, beta = 0.0f;
  FG_CUBLAS_CHECK(cublasLtMatmul(handle_, &desc.op, &alpha, w, &desc.a, x, &desc.b, &beta, sums, &desc.d, sums,
                                 &desc.d, &algo, workspace_, workspace_bytes_, stream));
}

}  // namespace fg::cuda
