// backend/cuda/cublaslt_linear.h — the linear for more than a few token rows, through cuBLASLt,
// with one algorithm per (weight shape, output type, bias, bucket of n), chosen once and then
// fixed.
//
// Graph == eager (DESIGN.md rule 7): a captured step runs n_padded rows, the same batch run
// eagerly runs its real n. Both must compute each row identically, so the algorithm is a pure
// function of the bucket that holds n (never of n itself, of timing or of history), and the
// buckets are the runner's capture sizes (core/size_buckets.h). Within one algorithm a row's
// arithmetic does not depend on how many rows there are.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "core/size_buckets.h"

namespace fg::cuda {

class CublasLtLinear {
 public:
  // A handle and a fixed workspace, both owned, for matmuls on one stream at a time.
  explicit CublasLtLinear(size_t workspace_bytes = size_t{32} << 20);
  ~CublasLtLinear();
  CublasLtLinear(const CublasLtLinear&) = delete;
  CublasLtLinear& operator=(const CublasLtLinear&) = delete;

  // out[i, j] = sum_k x[i, k] * w[j, k] (+ bias[j]) with fp32 accumulation; bias added in fp32
  // before the one rounding to the output type. x [n, in] BF16, w [out_features, in] BF16, bias
  // [out_features] BF16 or null, out [n, out_features] F32 or BF16; all pointers 16-byte aligned.
  // The algorithm is the one planned for `bucket` (planned now if this is its first use).
  // add_to_out (no bias): out += x · wᵀ, the sum and what out held added in fp32 and rounded once.
  void run(const void* x, const void* w, const void* bias, void* out, bool out_f32, int64_t n, int64_t in,
           int64_t out_features, SizeBuckets::Bucket bucket, cudaStream_t stream, bool add_to_out = false);

  // sums[i, j] = sum_k x[i, k] * w[j, k], rounded once to BF16, by cuBLASLt's FP8 GEMM: x [n, in]
  // and w [out_features, in] F8_E4M3, sums BF16 [n, out_features], in % 16 == 0. The scales of the
  // FP8 linear are applied after it (launch_fp8_scale_outputs): cuBLASLt's outer-vector scale
  // mode, which would take them in the GEMM, is refused on the H100 (CUBLAS_STATUS_INVALID_VALUE
  // from its heuristic). Otherwise as run().
  void run_fp8(const void* x, const void* w, void* sums, int64_t n, int64_t in, int64_t out_features,
               SizeBuckets::Bucket bucket, cudaStream_t stream);

  // Forgets every plan (e.g. when the buckets change).
  void clear_plans() { plans_.clear(); }

 private:
  // (out_features, in, bucket top, bucket bottom, F32 output, bias epilogue, FP8 inputs)
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, bool>;
  const cublasLtMatmulAlgo_t& plan(const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, cublasLtMatmulAlgo_t> plans_;
};

}  // namespace fg::cuda
