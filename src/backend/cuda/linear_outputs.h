// backend/cuda/linear_outputs.h — where the small-n linear kernels write their outputs: the columns
// of one matmul, split into up to kMaxParts consecutive ranges that each go to a tensor of their
// own. That lets one launch over weights lying back to back in memory (a layer's q, k and v
// projections, or its gate and up) write the separate q, k and v (gate, up) tensors the next
// kernels read, rather than one wide tensor they would have to stride through.
#pragma once

#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#endif

namespace fg::cuda {

struct LinearOutputs {
  static constexpr int kMaxParts = 3;
  void* data[kMaxParts];        // part p: [n, begin[p + 1] - begin[p]], rows contiguous
  int64_t begin[kMaxParts + 1];  // part p holds columns [begin[p], begin[p + 1]); begin[parts] = out_features
  int parts;
  // Add each result, rounded to the output type, to what the output holds (the residual stream:
  // CudaBackend::linear_residual_add), rather than store it. The sum is rounded once more: the
  // bits of a linear into scratch and then launch_add.
  bool add_to_output;

  // The plain case: every column into out [n, out_features].
  static LinearOutputs whole(void* out, int64_t out_features) {
    LinearOutputs o{};
    o.data[0] = out;
    o.begin[0] = 0;
    o.begin[1] = out_features;
    o.parts = 1;
    return o;
  }

  // The same parts from token row `row` on (each part's pointer moved down `row` of its rows).
  LinearOutputs from_row(int64_t row, int64_t element_bytes) const {
    LinearOutputs o = *this;
    for (int p = 0; p < parts; ++p)
      o.data[p] = static_cast<char*>(data[p]) + row * (begin[p + 1] - begin[p]) * element_bytes;
    return o;
  }

#ifdef __CUDACC__
  // The address of output (token, column). Constant indices only: indexing the kernel
  // parameter's arrays by a variable copies it to local memory (measured: 64 bytes of stack per
  // thread and the direct kernel 30% slower).
  template <typename OutT>
  __device__ __forceinline__ OutT* at(int token, int64_t column) const {
    static_assert(kMaxParts == 3, "one branch per part");
    void* base = data[0];
    int64_t first = begin[0], end = begin[1];
    if (parts > 1 && column >= begin[1]) {
      base = data[1];
      first = begin[1];
      end = begin[2];
    }
    if (parts > 2 && column >= begin[2]) {
      base = data[2];
      first = begin[2];
      end = begin[3];
    }
    return static_cast<OutT*>(base) + token * (end - first) + (column - first);
  }

  // Writes output (token, column): `value` rounded to OutT, or (add_to_output) that rounded value
  // plus what the output holds, rounded again. (Requesting what it holds ahead of the store, to
  // hide the load, measured slower: bench/RESULTS.md, 2026-12-01 session 7.)
  template <typename OutT>
  __device__ __forceinline__ void put(int token, int64_t column, float value) const {
    OutT* p = at<OutT>(token, column);
    if constexpr (std::is_same_v<OutT, float>) {
      *p = add_to_output ? *p + value : value;
    } else {
      const OutT rounded = __float2bfloat16_rn(value);
      *p = add_to_output ? __float2bfloat16_rn(__bfloat162float(*p) + __bfloat162float(rounded)) : rounded;
    }
  }
#endif
};

}  // namespace fg::cuda
