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

  // The columns of a group's parts back to back (BF16 LinearPart or Fp8LinearPart: anything with a
  // weight [out, in] and an out tensor), at most kMaxParts of them; `rows` gets the total.
  template <typename Parts>
  static LinearOutputs columns_of(const Parts& parts, int64_t& rows) {
    LinearOutputs o{};
    rows = 0;
    const int count = parts.size() < kMaxParts ? static_cast<int>(parts.size()) : kMaxParts;
    for (int p = 0; p < count; ++p) {
      o.data[p] = parts[p].out.data;
      o.begin[p] = rows;
      rows += parts[p].weight->dim(0);
    }
    o.begin[count] = rows;
    o.parts = count;
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
  // hide the load, measured slower: bench/RESULTS.md, 2026-12-01.)
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

  // Whether put_pair may store: every part begins at an even column, so that columns 2c and 2c + 1
  // lie in one part and, with the parts' rows an even number of elements long, at an address
  // aligned to the pair's size (the parts' tensors are 16-byte aligned).
  __device__ __forceinline__ bool pairs_fit() const {
    return ((begin[0] | begin[1] | begin[2] | begin[3]) & 1) == 0;
  }

  // put() of outputs (token, column) and (token, column + 1), column even, as one 4-byte (BF16) or
  // 8-byte (F32) store: each value rounded, and added, as put() would. Only where pairs_fit().
  // A lane's tensor-core accumulators hold such pairs; storing them two at a time halves the
  // store instructions and the partial-sector writes of a tile's store. Measured (bench/RESULTS.md,
  // 2026-12-02): the 1B q/k/v span at M = 16 6.34 -> 5.99 us, the 1B gate/up
  // span 18.32 -> 17.99; the decode step 1-3% faster on both Llama shapes at batches 1-16.
  template <typename OutT>
  __device__ __forceinline__ void put_pair(int token, int64_t column, float first, float second) const {
    OutT* p = at<OutT>(token, column);
    if constexpr (std::is_same_v<OutT, float>) {
      float2 v = make_float2(first, second);
      if (add_to_output) {
        const float2 held = *reinterpret_cast<const float2*>(p);
        v = make_float2(held.x + first, held.y + second);
      }
      *reinterpret_cast<float2*>(p) = v;
    } else {
      __nv_bfloat162 v = __floats2bfloat162_rn(first, second);
      if (add_to_output) {
        const __nv_bfloat162 held = *reinterpret_cast<const __nv_bfloat162*>(p);
        v = __floats2bfloat162_rn(__bfloat162float(held.x) + __bfloat162float(v.x),
                                  __bfloat162float(held.y) + __bfloat162float(v.y));
      }
      *reinterpret_cast<__nv_bfloat162*>(p) = v;
    }
  }

  // Outputs (token, column) and, when column + 1 < end, (token, column + 1), column even: one
  // put_pair() where `paired` (pairs_fit(), read once by the caller), else put() one at a time.
  template <typename OutT>
  __device__ __forceinline__ void put_neighbours(int token, int64_t column, int64_t end, float first, float second,
                                                 bool paired) const {
    if (paired && column + 1 < end) {
      put_pair<OutT>(token, column, first, second);
    } else {
      put<OutT>(token, column, first);
      if (column + 1 < end) put<OutT>(token, column + 1, second);
    }
  }
#endif
};

}  // namespace fg::cuda
