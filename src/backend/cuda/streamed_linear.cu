// backend/cuda/streamed_linear.cu — the decode-time linear (n <= 16 token rows) for the large
// weights (the LM heads, the gate/up projections, the down_proj of both Llama shapes): a
// persistent grid whose blocks stream their rows through shared memory with the tensor copy
// engine (TMA), so that the bytes in flight no longer depend on registers or warps.
//
// Why: a weight read once at M <= 16 is a pure stream. Register-fed loads (small_n_linear.cu)
// hold 64 bytes per lane and wait for them; on the LM head at M = 16 they reach 77% of the copy
// bandwidth, this kernel 95-99%. One producer thread per block keeps its ring of stages (a chunk
// of up to 64 rows x 256 k each) filling while four consumer warps run the tensor cores on the
// chunk that has landed. Measured on the way (bench/RESULTS.md, 2026-11-30):
// - a stage's weights come as 2-D tensor copies of whole tiles (per-row 512-byte bulk copies ran
//   at a third of the bandwidth); one copy for all the tiles of a full pass (up to 64
//   rows x 256 k), rather than one per tile, gained 1-4% (8B down_proj 32.6 -> 31.4 us at M = 1);
// - the token rows come through the stage too (one n-row copy): loading them through registers
//   one chunk ahead was 4-7% slower at M = 16 on the 8B MLP and LM head;
// - with fewer than ~4 tiles per block the stream is slow (1B down_proj: 35-42% of copy; ncu
//   shows the consumers waiting on the copies with DRAM 28% busy), hence the slices of k
//   (the 1B down_proj in 4 slices reads at 69%, the 8B down_proj in 2 at 90%); starting
//   each block's pass at a chunk of its own, so that the blocks do not all read the same token
//   chunk at once, changed nothing;
// - the kernel is launched with PDL and requests its first ring of weights before waiting for
//   the kernel that writes its tokens (a norm, or the previous streamed linear, both of which
//   let their dependents launch early): the start-up that cost ~3 us per launch overlaps the
//   previous kernel's tail (8B gate/up 32.3 -> 29.0 us back to back).
//
// Layout. The work is T tiles of 8 rows times S slices of k (streamed_k_slices: 1 for weights
// with many rows; for few rows and long k, enough slices to give every block about half a pass).
// Block b of G blocks (streamed_grid: at most 1 or 2 x SMs, streamed_blocks_per_sm; as few as give
// none more units) owns the contiguous range [b S T / G, (b+1) S T / G) of the units
// u = slice x T + tile, walked in passes: up to kPassTiles consecutive tiles of one slice; a pass
// walks its slice's chunks of kChunk values of k. A ring stage holds one chunk of the n token
// rows (in a slot of 8 or 16 rows), then of every tile of the pass, each [row][k] dense; weight
// rows past the end and k past `in` arrive as zeros (the tensor maps' out-of-bounds fill). The
// slot's rows past n hold stale bytes: they meet only output rows >= n, which are not stored. Each
// token fragment serves every tile of the pass.
//
// Gated (StreamedLinear::run_gated, the MLP's gate/up then SiLU-and-multiply): the weight is a
// gate/up span [gate; up], a unit is the pair (gate tile u, up tile u), and a pass holds up to 4
// pairs: its 4 gate tiles, then their 4 up tiles, land in the stage. Consumer warp w, which sums
// both tiles of pair w, stores silu(gate) * up. One launch replaces the span's linear and the
// silu_mul kernel after it (a kernel's latency per layer in a decode step) and keeps their bits:
// each sum is the same, rounded to BF16 before the product as the stored projections were.
//
// The residual stream (CudaBackend::rms_norm_linear_silu_mul, linear_residual_add): gated launches
// may normalize their token rows on the way in (input_norm.h; the consumers build the rows' sums
// of squares from the token fragments of each pass), and plain ones may add their outputs to the
// residual stream in their store (LinearOutputs::add_to_output).
//
// Order of the sums (DESIGN.md rule 7): consumer warp w accumulates the k-steps s = w (mod 4) of
// every chunk of its slice, chunks in order, and the four partial sums meet in warp order. With S
// slices, each slice's sums go to a device workspace and the block that brings a tile's last slice
// (an atomic count per tile) adds them in slice order. That order depends on `in` and S alone, and
// the tensor core computes each output from its own row and column, so every n in 1..16 gives
// bit-identical rows.
//
// FP8 (StreamedLinear::run_fp8, kFp8): e4m3 weights and token rows stream the same way, a box
// kChunk bytes wide (the copy engine's box is at most 256 values), so a stage holds half the k of
// a BF16 one and the ring twice the stages. Each lane's 16 bytes of a row are 64 values of k (one
// k-step per warp per chunk), converted to f16 for the tensor cores (mma_e4m3.cuh: exact products,
// fp32 sums): the token fragments once per step, the weight fragments once per tile. The store
// applies sum * x_scale * w_scale (+ bias) in fp32, the order of fp8_kernels.h, after the slices
// meet; with kRope (StreamedLinear::run_qkv_rope_fp8) before the rotation, gated
// (StreamedLinear::run_gated_fp8) before gate and up are rounded to BF16, as the unfused steps.
//
// Slices, measured (bench/RESULTS.md, 2026-11-30): see streamed_k_slices. Thread block
// clusters that meet through distributed shared memory, instead of the workspace, were slower
// (8B down_proj in 4 slices: 43.8 us against 34.9; in 2: 32.7 against 32.1).
#include "backend/cuda/bf16_vec.cuh"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/input_norm.h"
#include "backend/cuda/mma_bf16.cuh"
#include "backend/cuda/mma_e4m3.cuh"
#include "core/cuda/pdl.cuh"
#include "backend/cuda/qkv_rope.h"
#include "backend/cuda/streamed_linear.h"
#include "backend/cuda/tma_ring.cuh"

#include <algorithm>
#include <type_traits>

namespace fg::cuda {

namespace {

constexpr int kTileRows = kStreamedBoxRows;  // weight rows per tensor-core tile (the n8 side)
constexpr int kPassTiles = kStreamedPassTiles;  // tiles per pass: 64 weight rows share each token fragment
constexpr int kChunk = kStreamedBoxK;  // k per stage (the tensor copy's box width, its limit)
// A value of the matrices: BF16, or one e4m3 byte (kFp8). A box is kChunk values wide either way.
constexpr int value_bytes(bool fp8) { return fp8 ? 1 : 2; }
constexpr int tile_bytes(bool fp8) { return kTileRows * kChunk * value_bytes(fp8); }  // one tensor copy of weights
// The token slot of a stage: 16 rows when n > 8 (kUpperHalf), else 8 (rows past n are read but
// meet only output rows that are not stored).
constexpr int token_slot_bytes(bool upper_half, bool fp8) {
  return (upper_half ? kStreamedTokenRows : 8) * kChunk * value_bytes(fp8);
}
constexpr int kConsumerWarps = 4;
// A lane reads 16 bytes of a row per k-step: 8 BF16 values (a step of 32 k per warp) or 16 e4m3
// (64 k); the steps of a chunk go round-robin to the consumer warps.
constexpr int steps_per_warp(bool fp8) { return kChunk * value_bytes(fp8) / 64 / kConsumerWarps; }
constexpr int kThreads = (kConsumerWarps + 1) * 32;          // + the producer warp
constexpr int kMaxStages = 32;
constexpr int kPartialBytes = kConsumerWarps * kPassTiles * 4 * 32 * 4;
constexpr int kHeaderBytes = kPartialBytes + 1024;  // partial sums, barriers; the ring starts 1 KB-aligned
static_assert(2 * kMaxStages * 8 + kPassTiles * 4 + kConsumerWarps * 16 * 4 <= 1024,
              "the barriers, the tiles' completion flags and the rows' sums of squares fit the header");
// Mostly two blocks per SM, each with a ring of two full-pass stages (40 KB each; more of shorter
// ones): one block's epilogue and start overlap the other's stream. Measured against one block
// with five stages (bench/RESULTS.md, 2026-11-30): +2-4% on the LM heads, the same
// elsewhere; streamed_blocks_per_sm says when one block alone, with the SM's whole ring, is
// faster. Two blocks of this size fill an SM's 228 KB, so the next launch's blocks start only as
// these leave (about 2.5 us of each launch in a decode step: bench/RESULTS.md, 2026-12-01).
// Leaving room for them costs more than it saves: half the ring (one block of
// 96 KB, or two of 48) made the 8B decode step 30-42% slower; so did L2 prefetches of a block's
// own later weights, and those of the next launch's first stages gained nothing (bench/RESULTS.md,
// 2026-12-01). The stage count is not "more is better" either (2026-12-01, same-call
// A/B at M = 1 / 16): with the 16 KB of partial sums moved into each pass's last stage, the
// freed room gave 36 KB stages a third stage (1B gate_up span 16.8 -> 16.4 us, LM heads -1%) but
// 20 KB ones a fifth (1B gate/up 9.7 -> 10.5, 8B q/o_proj 11.1 -> 11.8), and a held stage costs
// 2-stage rings up to 30%; capped at 4 stages the decode step was level (1B -1.2% at batch 1,
// +0.5% at 8; 8B -0.7% / +0.9%). Shorter passes for more stages (6 or 4 tiles) and warps that
// each own whole tiles over all of k (no partial sums; M = 16 up to 15% slower, the step +3-7%)
// were slower.
constexpr int kMaxSharedBytes = kHeaderBytes + kStreamedRingBytesPerSm;
static_assert(kStreamedBlocksPerSm * (kHeaderBytes + kStreamedRingBytesPerSm / kStreamedBlocksPerSm + 1024) <=
                  228 * 1024,
              "two blocks' shared memory (and the 1 KB each reserves) must fit an SM");
constexpr int kUnitFloats = kStreamedSliceSumFloats;  // one tile's sums of one slice: [acc][lane]
constexpr int kMaxKSlicesLoaded = 8;  // slices whose sums one warp loads at once

__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(kConsumerWarps * 32) : "memory");
}

// A pass: up to pass_tiles consecutive tiles of one slice of k, which share each token fragment.
struct Pass {
  int64_t tile0;
  int tiles, slice, chunk_begin, chunk_end;
};

// The pass that starts at work unit `unit` (slice-major: unit = slice x tiles_total + tile) of a
// block whose units end at unit_end. group > 0: a pass does not cross a multiple of `group` units
// (kRope: half a head, so that its first tiles lie back to back).
__device__ __forceinline__ Pass pass_at(int64_t unit, int64_t unit_end, int64_t tiles_total, int pass_tiles,
                                        int k_slices, int chunks, int group) {
  Pass p;
  p.slice = static_cast<int>(unit / tiles_total);
  p.tile0 = unit % tiles_total;
  p.tiles = static_cast<int>(min(min(static_cast<int64_t>(pass_tiles), unit_end - unit), tiles_total - p.tile0));
  if (group > 0) p.tiles = min(p.tiles, static_cast<int>(group - p.tile0 % group));
  p.chunk_begin = p.slice * chunks / k_slices;
  p.chunk_end = (p.slice + 1) * chunks / k_slices;
  return p;
}

// kUpperHalf: token rows 8..15 are present (n > 8); without it their fragments are constant zeros.
// kGated: the weight is a gate/up span [gate; up] of 2 x out_features rows, and a work unit is a
// pair of tiles, gate tile u and up tile u (see launch_streamed_gated_linear): a stage holds
// pass_tiles gate tiles, then their pass_tiles up tiles, and the output is silu(gate) * up.
// kNorm (gated only): the token rows are normalized on the way in (input_norm.h): each token
// fragment becomes bf16(g ⊙ x) and adds to its row's sum of squares, and each pass's sums are
// scaled by 1 / rms (gate and up both, before their rounding).
// kRope: the weight is a q/k/v span and a unit is a pair of tiles in RoPE pairs, the first tile of
// rows (e .. e + 7) in the first half of a head and the second hd/2 rows below it (qkv_rope.h); a
// pass holds up to 4 pairs of one half head, its first tiles then their second tiles, as gated.
// Consumer warp w sums pair w and stores it rotated (q, k) or as it is (v), and k and v also in the
// cache.
template <bool kUpperHalf, typename OutT, bool kGated, bool kNorm, bool kRope, bool kFp8>
__global__ void __launch_bounds__(kThreads, 2)
    streamed_linear_kernel(const __grid_constant__ CUtensorMap weights, const __grid_constant__ CUtensorMap tokens,
                           const __grid_constant__ CUtensorMap pass_weights, const bf16* __restrict__ bias,
                           const LinearOutputs out, int n, int in, int out_features, int64_t tiles_total, int k_slices,
                           float* slice_sums, int* arrivals, int pass_tiles, int stages, const InputNorm norm,
                           const QkvRope rope, const Fp8Scales fp8_scales) {
  static_assert(!kNorm || kGated, "the plain kernel takes no input norm (CudaBackend::takes_input_norm)");
  static_assert(!(kGated && kRope) && (!kRope || std::is_same_v<OutT, bf16>), "RoPE pairs: BF16, not gated");
  static_assert(!kFp8 || (!kNorm && std::is_same_v<OutT, bf16>), "FP8: BF16 out, no input norm");
  constexpr bool kPaired = kGated || kRope;  // a unit is a pair of tiles
  extern __shared__ __align__(1024) unsigned char shared[];
  auto* partial = reinterpret_cast<float(*)[kPassTiles][4][32]>(shared);  // [warp][tile][acc][lane]
  auto* full = reinterpret_cast<uint64_t*>(shared + kPartialBytes);
  unsigned char* ring = shared + kHeaderBytes;  // [stage][token rows, then tile rows][k]
  uint64_t* empty = full + kMaxStages;
  int* completes = reinterpret_cast<int*>(empty + kMaxStages);  // [tile]: this block adds the tile's last slice
  auto* row_sum_sq = reinterpret_cast<float(*)[16]>(completes + kPassTiles);  // kNorm: [warp][token row]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  constexpr int kSlotBytes = token_slot_bytes(kUpperHalf, kFp8);
  constexpr int kTileBytes = tile_bytes(kFp8);
  constexpr int kRowBytes = kChunk * value_bytes(kFp8);  // a row of a stage's token slot or tile
  constexpr int kStepsPerWarp = steps_per_warp(kFp8);
  constexpr int kTilesPerUnit = kPaired ? 2 : 1;
  // kRope: tiles in half a head; the passes do not cross one (pass_at).
  const int pair_group = kRope ? rope.head_dim / (2 * kTileRows) : 0;
  // The weight tile of part `part` (0 or 1) of paired unit u: gated, gate tile u and up tile u
  // tiles_total tiles below; kRope, tile e of half a head and the tile hd/2 rows below it.
  auto pair_tile = [&](int64_t u, int part) -> int64_t {
    if constexpr (kRope) return (u / pair_group) * 2 * pair_group + u % pair_group + part * pair_group;
    return u + part * tiles_total;
  };
  const int stage_bytes = kSlotBytes + kTilesPerUnit * pass_tiles * kTileBytes;
  const int64_t units = tiles_total * k_slices;
  const int64_t unit_begin = blockIdx.x * units / gridDim.x;
  const int64_t unit_end = (blockIdx.x + 1) * units / gridDim.x;
  const int chunks = (in + kChunk - 1) / kChunk;

  if (threadIdx.x == 0) {
    allow_dependent_grids();  // they take SM room only as this grid's blocks leave
    prefetch_tensor_map(&weights);
    prefetch_tensor_map(&tokens);
    prefetch_tensor_map(&pass_weights);
    for (int s = 0; s < stages; ++s) {
      mbarrier_init(&full[s], 1);                // the producer's arrival (+ the copies' bytes)
      mbarrier_init(&empty[s], kConsumerWarps);  // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp == kConsumerWarps) {
    // Producer (one thread): for each (pass, chunk) item, wait for a free stage, announce its
    // bytes, one tensor copy of tokens and one of the pass's tiles (one per tile when the pass is
    // short of pass_tiles: a block's last). (Issuing the copies from several lanes
    // changed nothing: measured.) The weights depend on no earlier kernel, so the first ring's
    // worth of them is requested before waiting for the grid that writes the tokens: under PDL
    // they stream while that grid drains.
    if (lane != 0) return;
    const uint64_t weight_policy = l2_evict_first(), token_policy = l2_evict_last();
    const int token_bytes = n * kRowBytes;  // the token box is n rows high
    // Calls visit(item, pass, chunk) for the block's items in order while it returns true.
    auto for_each_item = [&](auto&& visit) {
      int item = 0;
      for (int64_t unit = unit_begin; unit < unit_end;) {
        const Pass p = pass_at(unit, unit_end, tiles_total, pass_tiles, k_slices, chunks, pair_group);
        for (int chunk = p.chunk_begin; chunk < p.chunk_end; ++chunk, ++item)
          if (!visit(item, p, chunk)) return;
        unit += p.tiles;
      }
    };
    auto copy = [&](int item, const Pass& p, int chunk, bool copy_tokens, bool copy_weights) {
      const int stage = item % stages;
      unsigned char* base = ring + stage * stage_bytes;
      if (copy_weights) {
        // The stage's bytes are announced before any copy lands. Paired, the second tiles lie
        // below the first ones (pair_tile), and land pass_tiles tiles after them.
        mbarrier_arrive_expect_tx(&full[stage], token_bytes + kTilesPerUnit * p.tiles * kTileBytes);
        for (int part = 0; part < kTilesPerUnit; ++part) {
          unsigned char* dst = base + kSlotBytes + part * pass_tiles * kTileBytes;
          const int64_t first_tile = kPaired ? pair_tile(p.tile0, part) : p.tile0;
          if (p.tiles == pass_tiles) {  // one copy for the whole pass: its tiles are adjacent rows
            tensor_copy_2d(dst, &pass_weights, chunk * kChunk, static_cast<int>(first_tile * kTileRows), &full[stage],
                           weight_policy);
          } else {
            for (int tile = 0; tile < p.tiles; ++tile)
              tensor_copy_2d(dst + tile * kTileBytes, &weights, chunk * kChunk,
                             static_cast<int>((first_tile + tile) * kTileRows), &full[stage], weight_policy);
          }
        }
      }
      if (copy_tokens) tensor_copy_2d(base, &tokens, chunk * kChunk, 0, &full[stage], token_policy);
    };
    // Fresh stages have nothing to wait for: their weights go first.
    for_each_item([&](int item, const Pass& p, int chunk) {
      if (item >= stages) return false;
      copy(item, p, chunk, false, true);
      return true;
    });
    wait_for_prerequisite_grids();
    for_each_item([&](int item, const Pass& p, int chunk) {
      if (item >= stages) mbarrier_wait(&empty[item % stages], ((item / stages) & 1) ^ 1);
      copy(item, p, chunk, true, item >= stages);
      return true;
    });
    return;
  }

  // Consumers. Without kUpperHalf (n <= 8) the token rows 8..15 are not even read.
  const int g = lane >> 2, t = lane & 3;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // kNorm: 1 / rms of token rows g and g + 8 (set at the end of each pass).
  float row_scale[2] = {1.0f, 1.0f};
  // Accumulators 2r and 2r + 1 of lane (g, t) are token g + 8 r's two neighbouring columns 2t, 2t + 1
  // of the tile: one paired store where the outputs allow it (LinearOutputs::pairs_fit).
  const bool paired_stores = out.pairs_fit();
  // FP8: token `token`'s scale, written by the kernel that quantized the row (a coherent load:
  // this warp follows the producer's PDL wait through the ring's barriers, pdl.cuh).
  auto token_scale = [&](int token) { return kFp8 ? load_written_f32(fp8_scales.tokens + token) : 1.0f; };
  // The output of weight row `row` from its sum: FP8, sum * x_scale * w_scale in fp8_kernels.h's
  // order; then the bias; each step rounded in fp32 (no contraction).
  auto finish = [&](float sum, float x_scale, int64_t row) {
    float value = sum;
    if constexpr (kFp8) value = __fmul_rn(__fmul_rn(value, x_scale), fp8_scales.weights[row]);
    if (bias != nullptr) value = __fadd_rn(value, __bfloat162float(bias[row]));
    return value;
  };
  auto store_tile = [&](int64_t tile_index, const float (&sum)[4]) {
    const int64_t row0 = tile_index * kTileRows + 2 * t;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int token = g + r * 8;
      if (token >= n || row0 >= out_features) continue;
      const float x_scale = token_scale(token);
      float value[2];
#pragma unroll
      for (int j = 0; j < 2; ++j)  // a row past the end is not stored
        value[j] = row0 + j < out_features ? finish(sum[2 * r + j], x_scale, row0 + j) : 0.0f;
      out.put_neighbours<OutT>(token, row0, out_features, value[0], value[1], paired_stores);
    }
  };
  // Gated: the bf16 gate and up values, as the separate projections would store them (FP8: each
  // sum scaled as finish() scales it, the up rows' weight scales out_features on from the gate
  // rows'), then SiLU-and-multiply exactly as silu_mul_kernel computes it, so the output has its
  // bits.
  auto store_gated_tile = [&](int64_t tile_index, const float (&gate)[4], const float (&up)[4]) {
    const int64_t row0 = tile_index * kTileRows + 2 * t;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int token = g + r * 8;
      if (token >= n || row0 >= out_features) continue;
      const float scale = kNorm ? row_scale[r] : 1.0f;
      const float x_scale = token_scale(token);
      float value[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float gs = gate[2 * r + j] * scale, us = up[2 * r + j] * scale;
        if constexpr (kFp8) {
          gs = finish(gate[2 * r + j], x_scale, row0 + j);
          us = finish(up[2 * r + j], x_scale, out_features + row0 + j);
        }
        const float gv = __bfloat162float(__float2bfloat16_rn(gs));
        const float uv = __bfloat162float(__float2bfloat16_rn(us));
        value[j] = gv / (1.0f + __expf(-gv)) * uv;
      }
      out.put_neighbours<OutT>(token, row0, out_features, value[0], value[1], paired_stores);
    }
  };
  // Accumulator a of a pass: its tile (first kHalf gate tiles, then their up tiles when gated) and
  // where that tile lies in the stage.
  constexpr int kHalf = kPassTiles / 2;
  auto tile_of = [](int a) { return kPaired ? a % kHalf : a; };
  auto slot_of = [&](int a) { return kPaired && a >= kHalf ? pass_tiles + a - kHalf : a; };
  // kRope: the store's cosines and sines (token g + 8 r, row 2t + j of the pair's first tile) and
  // the tokens' cache slots, read at the start of each pass, well before its last stage lands.
  float rope_cos[2][2] = {}, rope_sin[2][2] = {};
  int64_t rope_slot[2] = {-1, -1};
  auto read_rope_inputs = [&](const Pass& p) {
    if constexpr (kRope) {
      if (warp >= p.tiles) return;
      const int64_t row = pair_tile(p.tile0 + warp, 0) * kTileRows + 2 * t;
      const int e = static_cast<int>(row % rope.head_dim), half = rope.head_dim / 2;
      const bool rotated = row < out.begin[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int token = g + r * 8;
        rope_slot[r] = token < n ? rope.slot_mapping[token] : -1;
        if (token >= n || !rotated) continue;
        const float* cos_row = rope_angles(rope, token);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          rope_cos[r][j] = cos_row[e + j];
          rope_sin[r][j] = cos_row[half + e + j];
        }
      }
    }
  };
  // kRope: pair (first, second) of first tile `tile`, bias added, rotated in q and k
  // (rotate_qkv_pair). Accumulators 2r and 2r + 1 hold token g + 8 r's neighbouring columns 2t and
  // 2t + 1 of the first tile, and their partners hd/2 columns on: two paired stores
  // (store_qkv_columns).
  auto store_rope_pair = [&](int64_t tile, const float (&first)[4], const float (&second)[4]) {
    const int column = static_cast<int>(tile * kTileRows) + 2 * t, partner = column + rope.head_dim / 2;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int token = g + r * 8;
      if (token >= n) continue;
      const float x_scale = token_scale(token);
      float a[2], b[2];  // columns column + j and partner + j
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        a[j] = finish(first[2 * r + j], x_scale, column + j);
        b[j] = finish(second[2 * r + j], x_scale, partner + j);
        rotate_qkv_pair(out, column, a[j], b[j], rope_cos[r][j], rope_sin[r][j]);
      }
      store_qkv_columns(out, rope, token, column, a[0], a[1], rope_slot[r]);
      store_qkv_columns(out, rope, token, partner, b[0], b[1], rope_slot[r]);
    }
  };
  int item = 0;
  for (int64_t unit = unit_begin; unit < unit_end;) {
    const Pass p = pass_at(unit, unit_end, tiles_total, pass_tiles, k_slices, chunks, pair_group);
    unit += p.tiles;
    read_rope_inputs(p);
    float acc[kPassTiles][4] = {};
    float sum_sq_lo = 0.0f, sum_sq_hi = 0.0f;  // kNorm: rows g and g + 8 over this lane's k
    // kNorm: the norm weight at this lane's k-steps of a chunk, requested a chunk ahead so that its
    // latency never follows a stage's arrival. k past `in` holds zeros in the stage (the copy's
    // fill), and so must the weight's fragment there.
    uint4 norm_next[kStepsPerWarp];
    auto request_norm_weight = [&](int chunk) {
      if constexpr (kNorm) {
#pragma unroll
        for (int j = 0; j < kStepsPerWarp; ++j) {
          const int k = chunk * kChunk + (warp + j * kConsumerWarps) * 32 + t * 8;
          norm_next[j] = k < in ? __ldg(reinterpret_cast<const uint4*>(norm.weight + k)) : zero;
        }
      }
    };
    request_norm_weight(p.chunk_begin);
    for (int chunk = p.chunk_begin; chunk < p.chunk_end; ++chunk, ++item) {
      uint4 norm_now[kStepsPerWarp];
#pragma unroll
      for (int j = 0; j < kStepsPerWarp; ++j) norm_now[j] = norm_next[j];
      if (chunk + 1 < p.chunk_end) request_norm_weight(chunk + 1);
      const int stage = item % stages;
      mbarrier_wait(&full[stage], (item / stages) & 1);
      const unsigned char* base = ring + stage * stage_bytes + g * kRowBytes + t * 16;
#pragma unroll
      for (int j = 0; j < kStepsPerWarp; ++j) {
        const int offset = (warp + j * kConsumerWarps) * 64;  // bytes of k-step s = warp + 4 j
        uint4 lo = *reinterpret_cast<const uint4*>(base + offset);
        uint4 hi = kUpperHalf ? *reinterpret_cast<const uint4*>(base + 8 * kRowBytes + offset) : zero;
        if constexpr (kNorm) {
          lo = apply_norm_weight(lo, norm_now[j], sum_sq_lo);
          if (kUpperHalf) hi = apply_norm_weight(hi, norm_now[j], sum_sq_hi);
        }
        // FP8: the token fragments are converted once and serve every tile of the pass.
        uint32_t token_f16[4][4];
        if constexpr (kFp8) e4m3_a_fragments<kUpperHalf>(lo, hi, token_f16);
#pragma unroll
        for (int a = 0; a < kPassTiles; ++a) {
          if (tile_of(a) < p.tiles) {
            const uint4 wv = *reinterpret_cast<const uint4*>(base + kSlotBytes + slot_of(a) * kTileBytes + offset);
            if constexpr (kFp8) mma_e4m3_k64_slice(acc[a], token_f16, wv);
            else mma_k32_slice(acc[a], lo, hi, wv);
          }
        }
      }
      __syncwarp();
      if (lane == 0) mbarrier_arrive(&empty[stage]);
    }

    // The four partial sums of the pass meet in warp order; warp w sums tiles w, w + 4. Unsplit,
    // that is the output; split, it is this slice's sum, published to slice_sums. Gated, warp w
    // sums pair w (accumulators w and w + 4: a pass holds at most 4 pairs) and stores its product.
#pragma unroll
    for (int a = 0; a < kPassTiles; ++a)
      if (tile_of(a) < p.tiles)
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[warp][a][i][lane] = acc[a][i];
    if constexpr (kNorm) store_warp_row_sums(sum_sq_lo, sum_sq_hi, row_sum_sq[warp], g, t);
    consumers_sync();
    if constexpr (kNorm) row_scales(row_sum_sq, kConsumerWarps, g, in, norm.eps, row_scale);
    auto warp_sum = [&](int a, float (&sum)[4]) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        sum[i] = partial[0][a][i][lane];
#pragma unroll
        for (int other = 1; other < kConsumerWarps; ++other) sum[i] += partial[other][a][i][lane];
      }
    };
    if constexpr (kPaired) {
      static_assert(kConsumerWarps == kHalf, "one pair per consumer warp");
      if (warp < p.tiles) {
        float first[4], second[4];  // gated: gate and up
        warp_sum(warp, first);
        warp_sum(warp + kHalf, second);
        if constexpr (kGated) store_gated_tile(p.tile0 + warp, first, second);
        else store_rope_pair(pair_tile(p.tile0 + warp, 0), first, second);
      }
    } else {
      for (int tile = warp; tile < p.tiles; tile += kConsumerWarps) {
        float sum[4];
        warp_sum(tile, sum);
        if (k_slices == 1) {
          store_tile(p.tile0 + tile, sum);
        } else {
          float* mine = slice_sums + (p.slice * tiles_total + p.tile0 + tile) * kUnitFloats + lane;
#pragma unroll
          for (int i = 0; i < 4; ++i) mine[i * 32] = sum[i];
        }
      }
      if (k_slices > 1) {
        // Count this slice in for each tile of the pass; the block that brings a tile's last slice
        // adds all of its slices in slice order and re-arms the count for the next launch. One
        // thread publishes for the whole block: its fence, after the barrier, orders every
        // consumer's sums before its counts (and its second fence, the counts before the reads).
        consumers_sync();
        if (threadIdx.x == 0) {
          __threadfence();
          int before[kPassTiles];
#pragma unroll
          for (int tile = 0; tile < kPassTiles; ++tile)
            if (tile < p.tiles) before[tile] = atomicAdd(&arrivals[p.tile0 + tile], 1);
#pragma unroll
          for (int tile = 0; tile < kPassTiles; ++tile)
            if (tile < p.tiles) completes[tile] = before[tile] == k_slices - 1;
          __threadfence();
        }
        consumers_sync();
        for (int tile = warp; tile < p.tiles; tile += kConsumerWarps) {
          if (!completes[tile]) continue;
          // All slices' loads are in flight at once, then added in slice order.
          const float* sums = slice_sums + (p.tile0 + tile) * kUnitFloats + lane;
          float slice_sum[kMaxKSlicesLoaded][4];
#pragma unroll
          for (int s = 0; s < kMaxKSlicesLoaded; ++s)
#pragma unroll
            for (int i = 0; i < 4; ++i)
              slice_sum[s][i] = s < k_slices ? __ldcg(sums + s * tiles_total * kUnitFloats + i * 32) : 0.0f;
          float sum[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            sum[i] = slice_sum[0][i];
#pragma unroll
            for (int s = 1; s < kMaxKSlicesLoaded; ++s)
              if (s < k_slices) sum[i] += slice_sum[s][i];
          }
          for (int s = kMaxKSlicesLoaded; s < k_slices; ++s) {  // more slices than that: one at a time
#pragma unroll
            for (int i = 0; i < 4; ++i) sum[i] += __ldcg(sums + s * tiles_total * kUnitFloats + i * 32);
          }
          store_tile(p.tile0 + tile, sum);
          if (lane == 0) arrivals[p.tile0 + tile] = 0;
        }
      }
    }
    consumers_sync();  // `partial` and `completes` are free again
  }
}

template <bool kUpperHalf, typename OutT, bool kGated, bool kNorm = false, bool kRope = false, bool kFp8 = false>
void set_shared_limit() {
  FG_CUDA_CHECK(cudaFuncSetAttribute(streamed_linear_kernel<kUpperHalf, OutT, kGated, kNorm, kRope, kFp8>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSharedBytes));
}

// The grid over `units` work units (tiles x slices, or gated tile pairs) with passes of at most
// max_pass units.
StreamedGrid grid_for_units(int64_t units, int max_pass, int blocks_per_sm, int sm_count) {
  // The fewest blocks (at most blocks_per_sm per SM) that give none more units than a full grid would:
  // where the units divide evenly, every block streams as much as the others (the 8B down_proj's
  // 1024 units: 256 blocks of 4, rather than 264 of 3 or 4, measured 31.1 us against 32.6).
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t blocks = ceil_div(units, ceil_div(units, int64_t{sm_count} * blocks_per_sm));
  // A pass holds at most what a block owns, so that small grids get short stages and hence more
  // of them in the ring. The pass size moves no sum (see the header comment).
  const int64_t most_per_block = ceil_div(units, blocks);
  return {static_cast<int>(blocks), static_cast<int>(std::min<int64_t>(max_pass, most_per_block)),
          kStreamedRingBytesPerSm / blocks_per_sm};
}

// Launches the kernel with as many ring stages as the grid's ring bytes hold. out_features: the
// output columns (gated: the intermediate size); tiles: the units per slice (gated, kRope: tile
// pairs).
template <bool kGated, bool kRope = false, bool kFp8 = false>
void launch_kernel(const CUtensorMap& weights, const CUtensorMap& tokens, const CUtensorMap& pass_weights,
                   const bf16* bias, const LinearOutputs& out, bool out_f32, int64_t n, int64_t in,
                   int64_t out_features, int64_t tiles, int k_slices, StreamedGrid grid, float* slice_sums,
                   int* arrivals, const InputNorm& norm, cudaStream_t stream,
                   const QkvRope& rope = {}, const Fp8Scales& fp8_scales = {}) {
  const auto [blocks, pass_tiles, ring_bytes] = grid;
  const int stage_bytes = token_slot_bytes(n > 8, kFp8) + (kGated || kRope ? 2 : 1) * pass_tiles * tile_bytes(kFp8);
  const int stages = std::min(kMaxStages, ring_bytes / stage_bytes);
  const int shared_bytes = kHeaderBytes + stages * stage_bytes;
  const int n32 = static_cast<int>(n), in32 = static_cast<int>(in), out32 = static_cast<int>(out_features);
  auto launch = [&](auto upper_half, auto* out_type, auto normed) {
    using OutT = std::remove_pointer_t<decltype(out_type)>;
    // PDL: the kernel may start while the previous one in the stream drains (it waits for it
    // before touching the tokens, the output or the slice sums).
    launch_with_pdl(
        streamed_linear_kernel<decltype(upper_half)::value, OutT, kGated, decltype(normed)::value, kRope, kFp8>,
        dim3(static_cast<unsigned>(blocks)), dim3(kThreads), static_cast<size_t>(shared_bytes), stream, weights,
        tokens, pass_weights, bias, out, n32, in32, out32, tiles, k_slices, slice_sums, arrivals, pass_tiles, stages,
        norm, rope, fp8_scales);
  };
  // The gated kernel (the only one that takes an input norm): BF16 out only, the activation
  // feeds the down projection.
  bf16* const bf16_out = nullptr;
  float* const f32_out = nullptr;
  if constexpr (kRope || kFp8) {
    if (n > 8) launch(std::true_type{}, bf16_out, std::false_type{});
    else launch(std::false_type{}, bf16_out, std::false_type{});
  } else if constexpr (kGated) {
    if (norm.enabled()) {
      if (n > 8) launch(std::true_type{}, bf16_out, std::true_type{});
      else launch(std::false_type{}, bf16_out, std::true_type{});
    } else {
      if (n > 8) launch(std::true_type{}, bf16_out, std::false_type{});
      else launch(std::false_type{}, bf16_out, std::false_type{});
    }
  } else if (n > 8) {
    if (out_f32) launch(std::true_type{}, f32_out, std::false_type{});
    else launch(std::true_type{}, bf16_out, std::false_type{});
  } else {
    if (out_f32) launch(std::false_type{}, f32_out, std::false_type{});
    else launch(std::false_type{}, bf16_out, std::false_type{});
  }
}

}  // namespace

void configure_streamed_linear_kernels() {
  set_shared_limit<true, float, false>();
  set_shared_limit<true, bf16, false>();
  set_shared_limit<false, float, false>();
  set_shared_limit<false, bf16, false>();
  set_shared_limit<true, bf16, true>();
  set_shared_limit<false, bf16, true>();
  set_shared_limit<true, bf16, true, true>();
  set_shared_limit<false, bf16, true, true>();
  set_shared_limit<true, bf16, false, false, true>();
  set_shared_limit<false, bf16, false, false, true>();
  set_shared_limit<true, bf16, false, false, false, true>();
  set_shared_limit<false, bf16, false, false, false, true>();
  set_shared_limit<true, bf16, false, false, true, true>();
  set_shared_limit<false, bf16, false, false, true, true>();
  set_shared_limit<true, bf16, true, false, false, true>();
  set_shared_limit<false, bf16, true, false, false, true>();
}

StreamedGrid streamed_grid(int64_t out_features, int k_slices, int blocks_per_sm, int sm_count) {
  return grid_for_units((out_features + kTileRows - 1) / kTileRows * k_slices, kPassTiles, blocks_per_sm, sm_count);
}

StreamedGrid streamed_gated_grid(int64_t intermediate, int blocks_per_sm, int sm_count) {
  return grid_for_units(intermediate / kTileRows, kPassTiles / 2, blocks_per_sm, sm_count);
}

StreamedGrid streamed_qkv_rope_grid(int64_t rows, int blocks_per_sm, int sm_count) {
  return grid_for_units(rows / (2 * kTileRows), kPassTiles / 2, blocks_per_sm, sm_count);
}

void launch_streamed_linear(const CUtensorMap& weights, const CUtensorMap& tokens, const CUtensorMap& pass_weights,
                            const bf16* bias, const LinearOutputs& out, bool out_f32, int64_t n, int64_t in,
                            int64_t out_features, int k_slices, StreamedGrid grid, float* slice_sums, int* arrivals,
                            cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  const int64_t tiles = (out_features + kTileRows - 1) / kTileRows;
  launch_kernel<false>(weights, tokens, pass_weights, bias, out, out_f32, n, in, out_features, tiles, k_slices, grid,
                       slice_sums, arrivals, InputNorm{}, stream);
}

void launch_streamed_fp8_linear(const CUtensorMap& weights, const CUtensorMap& tokens,
                                const CUtensorMap& pass_weights, const Fp8Scales& scales, const bf16* bias,
                                const LinearOutputs& out, int64_t n, int64_t in, int64_t out_features, int k_slices,
                                StreamedGrid grid, float* slice_sums, int* arrivals, cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  const int64_t tiles = (out_features + kTileRows - 1) / kTileRows;
  launch_kernel<false, false, true>(weights, tokens, pass_weights, bias, out, false, n, in, out_features, tiles,
                                    k_slices, grid, slice_sums, arrivals, InputNorm{}, stream, QkvRope{}, scales);
}

void launch_streamed_gated_linear(const CUtensorMap& weights, const CUtensorMap& tokens,
                                  const CUtensorMap& pass_weights, bf16* out, int64_t n, int64_t in,
                                  int64_t intermediate, StreamedGrid grid, const InputNorm& norm,
                                  cudaStream_t stream) {
  if (n == 0 || intermediate == 0) return;
  launch_kernel<true>(weights, tokens, pass_weights, nullptr, LinearOutputs::whole(out, intermediate), false, n, in,
                      intermediate, intermediate / kTileRows, 1, grid, nullptr, nullptr, norm, stream);
}

void launch_streamed_gated_fp8_linear(const CUtensorMap& weights, const CUtensorMap& tokens,
                                      const CUtensorMap& pass_weights, const Fp8Scales& scales, bf16* out, int64_t n,
                                      int64_t in, int64_t intermediate, StreamedGrid grid, cudaStream_t stream) {
  if (n == 0 || intermediate == 0) return;
  launch_kernel<true, false, true>(weights, tokens, pass_weights, nullptr, LinearOutputs::whole(out, intermediate),
                                   false, n, in, intermediate, intermediate / kTileRows, 1, grid, nullptr, nullptr,
                                   InputNorm{}, stream, QkvRope{}, scales);
}

void launch_streamed_qkv_rope(const CUtensorMap& weights, const CUtensorMap& tokens, const CUtensorMap& pass_weights,
                              const bf16* bias, const LinearOutputs& out, const QkvRope& rope, int64_t n, int64_t in,
                              int64_t rows, StreamedGrid grid, cudaStream_t stream, const Fp8Scales* fp8) {
  if (n == 0 || rows == 0) return;
  const int64_t pairs = rows / (2 * kTileRows);
  if (fp8 != nullptr)
    launch_kernel<false, true, true>(weights, tokens, pass_weights, bias, out, false, n, in, rows, pairs, 1, grid,
                                     nullptr, nullptr, InputNorm{}, stream, rope, *fp8);
  else
    launch_kernel<false, true>(weights, tokens, pass_weights, bias, out, false, n, in, rows, pairs, 1, grid, nullptr,
                               nullptr, InputNorm{}, stream, rope);
}

}  // namespace fg::cuda
