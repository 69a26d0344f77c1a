// backend/cuda/streamed_linear.h — the streamed small-n linear: out = x · Wᵀ (+ bias) for n <= 16
// token rows, the weight streamed through shared memory by the tensor copy engine (TMA, sm_90).
// It takes the large weights (MLP, LM head), where bytes in flight decide the speed;
// small_n_linear.h takes the small ones, where launch latency does.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

namespace fg::cuda {

// Whether a weight of this shape takes the streamed kernel rather than the direct one
// (small_n_linear.h) on a device of sm_count SMs: when each of the 2 x sm_count blocks gets about
// 4 tiles of 8 rows or more (on an H200, 7920 rows: the LM heads and the gate/up of both Llama
// shapes), where it reads at 77-101% of the copy bandwidth. With fewer rows per block the stream
// is slower than the direct kernel (measured: bench/RESULTS.md, 2026-11-30 session 3). A function
// of the shape and device alone, so graph and eager runs of any n pick the same kernel.
inline bool prefers_streamed_linear(int64_t out_features, int sm_count) {
  return out_features >= int64_t{60} * sm_count;
}

// The boxes of the tensor copies: kStreamedBoxRows weight rows (a tensor-core tile), or the n <=
// kStreamedTokenRows token rows, by kStreamedBoxK values of k (the copy engine's largest box side).
inline constexpr int kStreamedBoxRows = 8;
inline constexpr int kStreamedTokenRows = 16;
inline constexpr int kStreamedBoxK = 256;

// out[i, j] = sum_k x[i, k] * w[j, k] (+ bias[j]), fp32 accumulation, bias added in fp32, one
// rounding to the output type. x [n, in] BF16 with 1 <= n <= 16, rows contiguous; w
// [out_features, in] BF16; bias [out_features] BF16 or null; out [n, out_features] F32 when
// out_f32, else BF16. in % 8 == 0, x and w 16-byte aligned. Each output's arithmetic depends on
// `in` alone: every n gives the same bits for a row.
//
// Holds the tensor maps of each weight and each token buffer (address and n) it has run, made on
// first use: host work only, so a run inside a graph capture may make one, and the graph keeps
// the maps by value. The runner's buffers are few and fixed, so the maps stay few.
class StreamedLinear {
 public:
  explicit StreamedLinear(int sm_count);
  ~StreamedLinear();
  StreamedLinear(const StreamedLinear&) = delete;
  StreamedLinear& operator=(const StreamedLinear&) = delete;

  void run(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias, void* out, bool out_f32,
           int64_t n, int64_t in, int64_t out_features, cudaStream_t stream);

 private:
  struct Maps;
  int sm_count_;
  std::unique_ptr<Maps> maps_;
};

// The kernel itself, over the maps StreamedLinear::run makes: the weight [out_features, in] in
// kStreamedBoxRows x kStreamedBoxK boxes, the tokens [n, in] in n x kStreamedBoxK boxes, both
// with zero out-of-bounds fill. Same contract as StreamedLinear::run.
void launch_streamed_linear(const CUtensorMap& weights, const CUtensorMap& tokens, const __nv_bfloat16* bias,
                            void* out, bool out_f32, int64_t n, int64_t in, int64_t out_features, int sm_count,
                            cudaStream_t stream);

}  // namespace fg::cuda
