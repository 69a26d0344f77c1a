// backend/cuda/streamed_linear.h — the streamed small-n linear: out = x · Wᵀ (+ bias) for n <= 16
// token rows, the weight streamed through shared memory by the tensor copy engine (TMA, sm_90).
// It takes the large weights (MLP, LM head), where bytes in flight decide the speed;
// small_n_linear.h takes the small ones, where launch latency does.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "backend/cuda/input_norm.h"
#include "backend/cuda/linear_outputs.h"
#include "backend/cuda/qkv_rope.h"

namespace fg::cuda {

// The boxes of the tensor copies: kStreamedBoxRows weight rows (a tensor-core tile), or the n <=
// kStreamedTokenRows token rows, by kStreamedBoxK values of k (the copy engine's largest box side).
inline constexpr int kStreamedBoxRows = 8;
inline constexpr int kStreamedTokenRows = 16;
inline constexpr int kStreamedBoxK = 256;
// The grid: at most kStreamedBlocksPerSm blocks per SM (streamed_blocks_per_sm), each walking its
// tiles in passes of up to kStreamedPassTiles tiles that share every token fragment. The blocks of
// an SM split kStreamedRingBytesPerSm of shared memory for their rings of stages.
inline constexpr int kStreamedBlocksPerSm = 2;
inline constexpr int kStreamedPassTiles = 8;
inline constexpr int kStreamedRingBytesPerSm = 192 * 1024;
// Floats of one tile's sums of one slice of k in the slice-sum workspace: [acc][lane].
inline constexpr int kStreamedSliceSumFloats = 4 * 32;

// Tiles x slices that give every block of a full grid one full pass: the most a split weight
// uses of the slice-sum workspace.
inline int64_t streamed_full_pass_units(int sm_count) {
  return int64_t{kStreamedPassTiles} * kStreamedBlocksPerSm * sm_count;
}

// How many slices of k the streamed kernel cuts a weight into: 1 when its tiles already give each
// block half a pass or more; else as many as give each block about half a pass (at most one per
// 256-wide chunk of k). The slices' sums meet in slice order. Half a pass, not a full one: the
// ring then holds four stages rather than two, and full passes measured slower or equal on the
// split shapes at M = 1 (bench/RESULTS.md, 2026-11-30: the 1B down_proj in 4 slices
// 11.4 us, in 8 12.3; the 1B q_proj 5.7 against 6.0; the 8B down_proj 31.1 in 2 and in 4).
// A function of the shape and the device alone, so every n (and graph and eager runs) gives the
// same bits for a row.
inline int streamed_k_slices(int64_t out_features, int64_t in, int sm_count) {
  const int64_t tiles = (out_features + kStreamedBoxRows - 1) / kStreamedBoxRows;
  const int64_t chunks = (in + kStreamedBoxK - 1) / kStreamedBoxK;
  const int64_t half = streamed_full_pass_units(sm_count) / 2;
  if (tiles >= half) return 1;
  return static_cast<int>(std::clamp<int64_t>(half / tiles, 1, chunks));
}

// The streamed kernel's blocks per SM: 2, or 1 for an unsplit weight (one slice of k) when n > 8
// and 2 per SM would leave passes of half kStreamedPassTiles or fewer. Above 8 rows a stage's token
// chunk is 16 rows (8 KB), half the bytes of a 4-tile pass's weights, and every block reads it
// again from L2; one block per SM, with passes twice as long, halves those reads. Measured
// (bench/RESULTS.md, 2026-12-01, M = 16, one block per SM against two, four
// repetitions): the 1B gate/up 9.7-10.6 us against 10.5-10.9 (cuBLASLt 10.2-10.5), the 8B q/k/v span
// 15.3-15.4 against 15.4-15.6. Split weights keep two: the 1B down_proj (4 slices) took 12.6-12.7
// us with one against 12.1-12.3 with two in three of the four runs; the 8B down_proj (2 slices)
// gained 0-1.4% with one, too little to carry a rule. With longer passes two are faster (8B
// gate/up, 7 tiles a block: 29.6-31.3 against 28.9-29.9; the LM heads 2-3%), and so at M = 1 on
// every streamed shape.
// The grid moves no sum (see streamed_linear.cu), so a row's bits do not depend on this choice.
inline int streamed_blocks_per_sm(int64_t out_features, int k_slices, int64_t n, int sm_count) {
  const int64_t units = (out_features + kStreamedBoxRows - 1) / kStreamedBoxRows * k_slices;
  const int64_t full_grid = int64_t{kStreamedBlocksPerSm} * sm_count;
  const bool short_passes = (units + full_grid - 1) / full_grid <= kStreamedPassTiles / 2;
  return n > 8 && k_slices == 1 && short_passes ? 1 : kStreamedBlocksPerSm;
}

// Whether a weight of this shape takes the streamed kernel rather than the direct one
// (small_n_linear.h) on a device of sm_count SMs (measured: bench/RESULTS.md, 2026-11-30 sessions
// 3 and 4):
// - when each of the 2 x sm_count blocks gets about 4 tiles of 8 rows or more (on an H200, 7920
//   rows: the LM heads and the gate/up of both Llama shapes), where it reads at 77-101% of the
//   copy bandwidth;
// - or when it holds 32 MB or more (the down_proj of both shapes, the 8B q/k/v span, q_proj and
//   o_proj), cut into slices of k where it has few rows. Alone, back to back, the streamed kernel
//   wins on the long rows (down_proj: the direct kernel falls to 59% (1B) and 80% (8B) of copy at
//   M = 16, the streamed one holds 65% and 88%) and the 8B q/k/v span (14.9 / 15.3 us at M = 1 /
//   16 against 16.2 / 18.2), and loses a little on the 8B q/o_proj (11.1 against 10.7 us at M =
//   1). In the decode step it wins there too: its blocks request their whole ring of weights
//   before the PDL wait, and after RoPE and attention, which leave the shared memory free, the
//   ring holds most of a 32 MB weight, where the direct kernel's registers hold a group per warp.
//   Measured (bench/RESULTS.md, 2026-12-01, graph replay): the 8B o_proj 15.2 ->
//   12.1 us in the step, the step 4.648 -> 4.488 ms at batch 1, 4.766 -> 4.514 at batch 8, level
//   at 64. Below 32 MB the direct kernel stays: streamed, the 1B q/k/v span and o_proj made the 1B
//   step 1.020 -> 1.069 ms.
// FP8 weights (value_bytes 1: StreamedLinear::run_fp8 against fp8_small_n_linear) follow the same
// rule in bytes. Measured (bench/RESULTS.md, 2026-12-07, H100, M = 1): streamed, the 8B gate/up
// span (28672 rows) 44.1 us against 64.7, gate/up 23.4 against 32.2, down_proj (56 MB) 26.8
// against 31.1, the 1B gate/up span 15.9 against 18.8; direct, the weights of 32 MB of e4m3 or
// less: the 8B q/o_proj 10.1 against 12.2, its q/k/v span 13.2 against 15.0, the 1B down_proj 9.2
// against 12.6. Since the direct kernel is double buffered (same entry, `0120d74`) it is level
// at M = 1 on the large weights too (the 8B gate_up span 42.0 against 43.1, down_proj 23.1
// against 26.3) but falls behind at M = 16 (53.9 against 44.7). In the step (2026-12-07, `cac7aa2`)
// the 8B down_proj direct moved the step by -0.9% at batch 1 and +0.5% at batch 8, within the
// table's spread, so FP8 weights keep the bytes clause.
// A function of the shape and device alone, so graph and eager runs of any n pick the same kernel.
inline bool prefers_streamed_linear(int64_t out_features, int64_t in, int sm_count, int value_bytes = 2) {
  constexpr int64_t kMinStreamedBytes = int64_t{32} << 20;
  return out_features >= int64_t{60} * sm_count || out_features * in * value_bytes >= kMinStreamedBytes;
}

// Whether the streamed kernel runs a weight of these sizes in one slice of k: what its paired modes
// (gated, RoPE) need, since each sums a pair of tiles whole.
inline bool streams_unsplit(int64_t out_features, int64_t in, int sm_count, int value_bytes = 2) {
  return prefers_streamed_linear(out_features, in, sm_count, value_bytes) &&
         streamed_k_slices(out_features, in, sm_count) == 1;
}

// Whether StreamedLinear::run_gated takes a gate/up span of these sizes: the span streams unsplit
// and its halves are whole tiles. value_bytes 1: an FP8 span (StreamedLinear::run_gated_fp8).
inline bool gated_linear_applies(int64_t intermediate, int64_t in, int sm_count, int value_bytes = 2) {
  return intermediate % kStreamedBoxRows == 0 && streams_unsplit(2 * intermediate, in, sm_count, value_bytes);
}

// Whether StreamedLinear::run_qkv_rope takes a q/k/v span of `rows` rows (q, k and v whole heads of
// head_dim, a multiple of 16): the span streams unsplit.
// value_bytes 1: an FP8 span (StreamedLinear::run_qkv_rope_fp8).
inline bool qkv_rope_streamed_applies(int64_t rows, int64_t in, int64_t head_dim, int sm_count, int value_bytes = 2) {
  return head_dim % 16 == 0 && rows % head_dim == 0 && streams_unsplit(rows, in, sm_count, value_bytes);
}

struct StreamedGrid;

// The scales of an FP8 launch (launch_streamed_fp8_linear): per token row and per weight row.
struct Fp8Scales {
  const float* tokens = nullptr;
  const float* weights = nullptr;
};

// out[i, j] = sum_k x[i, k] * w[j, k] (+ bias[j]), fp32 accumulation, bias added in fp32, one
// rounding to the output type. x [n, in] BF16 with 1 <= n <= 16, rows contiguous; w
// [out_features, in] BF16; bias [out_features] BF16 or null; out: the [n, out_features] outputs,
// F32 when out_f32, else BF16, in one tensor or split by columns (linear_outputs.h). in % 8 == 0,
// x and w 16-byte aligned. Each output's arithmetic depends on `in` and the slice count alone:
// every n (and every split of the outputs) gives the same bits for a row.
//
// Holds the tensor maps of each weight and each token buffer (address and n) it has run, made on
// first use: host work only, so a run inside a graph capture may make one, and the graph keeps
// the maps by value. The runner's buffers are few and fixed, so the maps stay few. Also holds the
// device workspace where the slices of a split weight meet: runs must be ordered (one stream, or
// events between streams); a run reuses it once the run before it has finished.
class StreamedLinear {
 public:
  explicit StreamedLinear(int sm_count);
  ~StreamedLinear();
  StreamedLinear(const StreamedLinear&) = delete;
  StreamedLinear& operator=(const StreamedLinear&) = delete;

  // k_slices 0 takes streamed_k_slices(); any other value (1 .. the chunks of k, with k_slices x
  // tiles <= streamed_full_pass_units when more than 1) is for tests and benchmarks.
  // blocks_per_sm 0 takes streamed_blocks_per_sm(); 1 or 2 is for tests and benchmarks.
  // out.add_to_output (BF16 out only) adds the results to the outputs (the residual stream).
  void run(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias, const LinearOutputs& out,
           bool out_f32, int64_t n, int64_t in, int64_t out_features, cudaStream_t stream, int k_slices = 0,
           int blocks_per_sm = 0);

  // The first half of a gated MLP in one launch: out = silu(x · gateᵀ) * (x · upᵀ), BF16 [n,
  // intermediate], where w = [gate; up] is a gate/up span [2 x intermediate, in]. Each gate and up
  // value has the bits run() gives the span's column (rounded to BF16), and the product the bits
  // silu_mul gives those, when the span runs unsplit: gated_linear_applies says when.
  // blocks_per_sm as in run(). An enabled norm normalizes x on the way in (input_norm.h): gate and
  // up are both scaled by 1 / rms before their rounding. Only the gated kernel takes one: on the
  // plain kernel it measured slower than the norm kernel it saves (CudaBackend::takes_input_norm).
  void run_gated(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* out, int64_t n, int64_t in,
                 int64_t intermediate, cudaStream_t stream, int blocks_per_sm = 0, const InputNorm& norm = {});

  // run() of a q/k/v span w [rows, in] (bias: its biases back to back, or null) into the three
  // parts of `out`, then RoPE and the cache write of rope_and_cache_write, in one launch
  // (qkv_rope.h): q, k, v and the cache get the bits of run() then launch_rope_and_cache_write.
  // qkv_rope_streamed_applies says when. blocks_per_sm 0 takes kStreamedBlocksPerSm (see the .cpp);
  // 1 or 2 is for tests and benchmarks.
  void run_qkv_rope(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                    const LinearOutputs& out, const QkvRope& rope, int64_t n, int64_t in, int64_t rows,
                    cudaStream_t stream, int blocks_per_sm = 0);

  // The FP8 linear of fp8_kernels.h (launch_fp8_small_n_linear's contract, in % 16 == 0) streamed:
  // x [n, in] e4m3 rows with scales [n], w [out_features, in] e4m3 with scales [out_features]; each
  // output is sum * x_scale * w_scale (+ bias) in fp32 in that order, one rounding to BF16 (added
  // to the output with out.add_to_output). k_slices and blocks_per_sm as in run(); a row's bits
  // depend on `in` and the slice count alone.
  void run_fp8(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
               const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t in, int64_t out_features,
               cudaStream_t stream, int k_slices = 0, int blocks_per_sm = 0);

  // run_gated of an FP8 gate/up span w [2 x intermediate, in] with scales [2 x intermediate] (gate's
  // then up's) over e4m3 rows x with scales [n]: each gate and up value has the bits run_fp8 of the
  // span gives its column (rounded to BF16), and the product the bits silu_mul gives those.
  // gated_linear_applies(..., 1) says when.
  void run_gated_fp8(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                     __nv_bfloat16* out, int64_t n, int64_t in, int64_t intermediate, cudaStream_t stream);

  // run_qkv_rope of an FP8 q/k/v span: each sum scaled as run_fp8's, then rotated and stored (and
  // cached) with the bits of run_fp8 then launch_rope_and_cache_write. Same conditions.
  void run_qkv_rope_fp8(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                        const __nv_bfloat16* bias, const LinearOutputs& out, const QkvRope& rope, int64_t n,
                        int64_t in, int64_t rows, cudaStream_t stream);

 private:
  struct Maps;
  // The grid of a plain (or FP8) run; resolves k_slices 0 and blocks_per_sm 0 and checks both.
  StreamedGrid plain_grid(int64_t n, int64_t in, int64_t out_features, int& k_slices, int blocks_per_sm) const;
  // The grid of a q/k/v run with RoPE, its conditions checked; blocks_per_sm 0 as in run_qkv_rope.
  StreamedGrid qkv_rope_grid(const LinearOutputs& out, const QkvRope& rope, int64_t in, int64_t rows,
                             int blocks_per_sm, int value_bytes) const;
  int sm_count_;
  std::unique_ptr<Maps> maps_;
  float* slice_sums_ = nullptr;  // [slice][tile][acc][lane] of a split weight
  int* arrivals_ = nullptr;      // [tile]: slices summed so far; the last one re-arms it to 0
};

// Sets the kernels' shared-memory limit; once per device, before the first launch.
void configure_streamed_linear_kernels();

// The grid of a launch: its blocks, the most tiles one pass holds (the rows of the pass-wide
// weight box), and each block's ring of stages in bytes. A function of the shape, the slice
// count, the blocks per SM and the device.
struct StreamedGrid {
  int blocks, pass_tiles, ring_bytes;
};
// blocks_per_sm: 1 .. kStreamedBlocksPerSm.
StreamedGrid streamed_grid(int64_t out_features, int k_slices, int blocks_per_sm, int sm_count);
// The grid of a gated launch: its units are pairs of tiles (gate tile u, up tile u), and a pass
// holds at most kStreamedPassTiles / 2 of them, so a stage has a plain full pass's bytes;
// pass_tiles counts pairs.
StreamedGrid streamed_gated_grid(int64_t intermediate, int blocks_per_sm, int sm_count);
// The grid of a q/k/v span with RoPE: its units are pairs of tiles (e .. e + 7 of half a head, and
// the tile hd/2 rows below), as many as rows / 16, and a pass holds at most kStreamedPassTiles / 2.
StreamedGrid streamed_qkv_rope_grid(int64_t rows, int blocks_per_sm, int sm_count);

// The kernel itself, over the maps StreamedLinear::run makes: the weight [out_features, in] in
// kStreamedBoxRows x kStreamedBoxK boxes and again in grid.pass_tiles x kStreamedBoxRows x
// kStreamedBoxK boxes (pass_weights), the tokens [n, in] in n x kStreamedBoxK boxes, all with
// zero out-of-bounds fill; k cut into k_slices slices (1 .. the chunks of k) whose sums meet in
// slice_sums (k_slices x tiles x kStreamedSliceSumFloats floats) counted by arrivals (tiles ints,
// all 0 between launches), both unused when k_slices is 1; grid = streamed_grid(out_features,
// k_slices, SMs). Same contract as StreamedLinear::run.
void launch_streamed_linear(const CUtensorMap& weights, const CUtensorMap& tokens, const CUtensorMap& pass_weights,
                            const __nv_bfloat16* bias, const LinearOutputs& out, bool out_f32, int64_t n, int64_t in,
                            int64_t out_features, int k_slices, StreamedGrid grid, float* slice_sums,
                            int* arrivals, cudaStream_t stream);

// The FP8 kernel over the maps StreamedLinear::run_fp8 makes (as launch_streamed_linear's, of e4m3
// matrices: a box is kStreamedBoxK bytes wide); same contract as StreamedLinear::run_fp8.
void launch_streamed_fp8_linear(const CUtensorMap& weights, const CUtensorMap& tokens,
                                const CUtensorMap& pass_weights, const Fp8Scales& scales,
                                const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t in,
                                int64_t out_features, int k_slices, StreamedGrid grid, float* slice_sums,
                                int* arrivals, cudaStream_t stream);

// The gated kernel over the maps StreamedLinear::run_gated makes: the span [2 x intermediate, in]
// in kStreamedBoxRows x kStreamedBoxK boxes and in grid.pass_tiles x kStreamedBoxRows x
// kStreamedBoxK boxes (pass_weights), the tokens as above; grid = streamed_gated_grid(...). Same
// contract as StreamedLinear::run_gated.
void launch_streamed_gated_linear(const CUtensorMap& weights, const CUtensorMap& tokens,
                                  const CUtensorMap& pass_weights, __nv_bfloat16* out, int64_t n, int64_t in,
                                  int64_t intermediate, StreamedGrid grid, const InputNorm& norm,
                                  cudaStream_t stream);

// The gated kernel over e4m3 maps (as launch_streamed_gated_linear's), each sum scaled as
// run_fp8's; same contract as StreamedLinear::run_gated_fp8.
void launch_streamed_gated_fp8_linear(const CUtensorMap& weights, const CUtensorMap& tokens,
                                      const CUtensorMap& pass_weights, const Fp8Scales& scales,
                                      __nv_bfloat16* out, int64_t n, int64_t in, int64_t intermediate,
                                      StreamedGrid grid, cudaStream_t stream);

// The q/k/v kernel with RoPE over the maps StreamedLinear::run_qkv_rope makes (as run_gated's, over
// the span [rows, in]); grid = streamed_qkv_rope_grid(...). Same contract as run_qkv_rope.
// With fp8, the maps are of e4m3 matrices and each sum is scaled as run_fp8's (run_qkv_rope_fp8).
void launch_streamed_qkv_rope(const CUtensorMap& weights, const CUtensorMap& tokens, const CUtensorMap& pass_weights,
                              const __nv_bfloat16* bias, const LinearOutputs& out, const QkvRope& rope, int64_t n,
                              int64_t in, int64_t rows, StreamedGrid grid, cudaStream_t stream,
                              const Fp8Scales* fp8 = nullptr);

}  // namespace fg::cuda
