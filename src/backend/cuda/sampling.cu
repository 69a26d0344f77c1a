// backend/cuda/sampling.cu — the sampling kernel: one thread-block cluster per row computes the
// greedy id, or the min-p / top-k / top-p filtered inverse-CDF draw of sampling_params.h, exactly
// as the CPU reference does (same per-token float formulas from sampling_math.h, exact integer
// masses after that).
//
// Layout: the row is split into `cluster` contiguous slices of `tiles` x 2048 tokens, one per CTA
// of 512 threads; thread t owns the float4 groups t, t + 512, ... of its slice, so loads coalesce
// and shared-memory reads are conflict-free. The slice stays in shared memory (scaled logit and
// relative weight per token), so after the one global read every pass is on chip. CTAs agree on
// row-wide values through distributed shared memory: each publishes into its own double-buffered
// slot, one cluster barrier, then each reads every slot in rank order. All such values are integer
// sums or a max with a fixed tie rule, so every CTA derives the same thresholds and the launch
// shape cannot change the token.
//
// Thresholds (top-k, top-p) are found by a 4-pass radix select over float_key(scaled logit),
// 8 bits per pass: a 256-bin histogram of counts (top-k) or integer masses (top-p) over the tokens
// still matching the prefix, summed across the cluster, picks the next digit. The draw then needs
// the kept mass of each CTA (prefix over ranks = token-id order) and a two-level scan inside the
// CTA that owns the drawn offset.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "backend/cuda/sampling.h"
#include "sampling/philox.h"
#include "sampling/sampling_math.h"

namespace fg::cuda {

namespace {

namespace cg = cooperative_groups;
namespace sm = fg::sampling;
using ull = unsigned long long;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = kThreads * 4;  // tokens per tile: one float4 per thread
constexpr int kMaxCluster = 8;       // the portable cluster size
constexpr int kMaxTiles = static_cast<int>(kMaxCudaSamplingVocab / (kMaxCluster * kTile));
constexpr int kBins = 256;
constexpr int kMaxGather = 3;                      // values per CTA in one cluster exchange
constexpr uint32_t kFirstFiniteKey = 0x00800000u;  // float_key(-inf) + 1: "scaled > -inf"
constexpr unsigned kFullMask = 0xffffffffu;

static_assert(kMaxCudaSamplingVocab % (kMaxCluster * kTile) == 0);

struct Shared {
  ull xbuf[2][kBins];                      // this CTA's published values / histogram, double-buffered
  ull comb[kBins];                         // histogram summed over the cluster
  uint32_t hist[3][kBins];                 // this CTA's histogram: counts, or masses in 16-bit chunks
  ull gathered[kMaxCluster * kMaxGather];  // [rank][value] of the last exchange
  ull seg[kMaxTiles * kWarps];             // kept mass per (tile, warp): token-id order
  ull red[kMaxGather][kWarps];             // block reductions
  float red_max[kWarps];
  int red_id[kWarps];
  ull above;
  uint32_t digit;
  int found_id;
};

__device__ __forceinline__ ull warp_sum(ull x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

// The greedy order: larger value first, then the lower id. NaN never wins.
__device__ __forceinline__ bool better(float v, int id, float best, int best_id) {
  return v > best || (v == best && id < best_id);
}

__device__ __forceinline__ float lane(const float4& v, int e) {
  return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}
__device__ __forceinline__ void set_lane(float4& v, int e, float x) {
  if (e == 0)
    v.x = x;
  else if (e == 1)
    v.y = x;
  else if (e == 2)
    v.z = x;
  else
    v.w = x;
}

struct KernelParams {
  SamplingKernelArgs args;
  int64_t row_offset;
  int tiles;  // per CTA
  bool vec4;  // rows are 16-byte aligned
};

// One row's work, seen from one CTA of its cluster.
class RowSampler {
 public:
  __device__ RowSampler(Shared& sh, float4* scaled, float4* weight, int tiles, int64_t vocab)
      : cluster_(cg::this_cluster()), sh_(sh), scaled_(scaled), weight_(weight), tiles_(tiles), vocab_(vocab) {
    rank_ = static_cast<int>(cluster_.block_rank());
    ranks_ = static_cast<int>(cluster_.num_blocks());
    base_ = static_cast<int64_t>(rank_) * tiles * kTile;
  }

  __device__ int rank() const { return rank_; }
  __device__ int ranks() const { return ranks_; }
  __device__ ull gathered(int rank, int n, int count) const { return sh_.gathered[rank * count + n]; }

  // Every CTA must arrive here before any exits: others may still read its shared memory.
  __device__ void finish() { cluster_.sync(); }

  // Reads this CTA's slice (into shared memory when `keep`), and returns the row's maximum and
  // the lowest id holding it (0 when no logit is a maximum, e.g. all NaN).
  __device__ void load_and_argmax(const float* row, bool vec4, bool keep, float& logit_max, int& greedy) {
    float best = -INFINITY;
    int best_id = INT_MAX;
#pragma unroll 4
    for (int j = 0; j < tiles_; ++j) {
      const int slot = j * kThreads + static_cast<int>(threadIdx.x);
      const int64_t id0 = base_ + static_cast<int64_t>(slot) * 4;
      float4 v;
      if (vec4 && id0 + 3 < vocab_) {
        v = __ldg(reinterpret_cast<const float4*>(row + id0));
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) set_lane(v, e, id0 + e < vocab_ ? row[id0 + e] : -INFINITY);
      }
      if (keep) scaled_[slot] = v;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (id0 + e < vocab_ && better(lane(v, e), static_cast<int>(id0 + e), best, best_id)) {
          best = lane(v, e);
          best_id = static_cast<int>(id0 + e);
        }
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other = __shfl_xor_sync(kFullMask, best, offset);
      const int other_id = __shfl_xor_sync(kFullMask, best_id, offset);
      if (better(other, other_id, best, best_id)) {
        best = other;
        best_id = other_id;
      }
    }
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    if ((threadIdx.x & 31) == 0) {
      sh_.red_max[warp] = best;
      sh_.red_id[warp] = best_id;
    }
    __syncthreads();
    for (int w = 0; w < kWarps; ++w) {
      if (better(sh_.red_max[w], sh_.red_id[w], best, best_id)) {
        best = sh_.red_max[w];
        best_id = sh_.red_id[w];
      }
    }
    const ull mine[2] = {__float_as_uint(best), static_cast<ull>(static_cast<unsigned>(best_id))};
    gather(mine);
    best = -INFINITY;
    best_id = INT_MAX;
    for (int r = 0; r < ranks_; ++r) {
      const float v = __uint_as_float(static_cast<unsigned>(gathered(r, 0, 2)));
      const int id = static_cast<int>(gathered(r, 1, 2));
      if (better(v, id, best, best_id)) {
        best = v;
        best_id = id;
      }
    }
    logit_max = best;
    greedy = best_id == INT_MAX ? 0 : best_id;
  }

  // Z of the logprob for this CTA's raw logits (still in `scaled_`), summed over the block.
  __device__ ull raw_mass(float logit_max) {
    ull z = 0;
    for (int j = 0; j < tiles_; ++j) {
      const int slot = j * kThreads + static_cast<int>(threadIdx.x);
      const float4 v = scaled_[slot];
#pragma unroll
      for (int e = 0; e < 4; ++e) z += sm::fixed_weight(sm::exp_det(sm::fsub(lane(v, e), logit_max)));
    }
    ull sums[1] = {z};
    block_sum(sums);
    return sums[0];
  }

  // Replaces the raw logits by scaled logits (-inf outside B) and fills the weights (0 outside B).
  // sums = {|B|, W_B, Z} of this thread.
  __device__ void weigh(float temperature, float scaled_max, float logit_max, float min_p, bool want_z,
                        ull (&sums)[3]) {
    for (int j = 0; j < tiles_; ++j) {
      const int slot = j * kThreads + static_cast<int>(threadIdx.x);
      const int64_t id0 = base_ + static_cast<int64_t>(slot) * 4;
      const float4 raw = scaled_[slot];
      float4 s_out, w_out;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float l = lane(raw, e);
        const float s = sm::scaled_logit(l, temperature);
        const float w = sm::relative_weight(s, scaled_max);
        const ull q = sm::fixed_weight(w);
        const bool in_base = id0 + e < vocab_ && q > 0 && w >= min_p;
        if (want_z && id0 + e < vocab_) sums[2] += sm::fixed_weight(sm::exp_det(sm::fsub(l, logit_max)));
        set_lane(s_out, e, in_base ? s : -INFINITY);
        set_lane(w_out, e, in_base ? w : 0.0f);
        sums[0] += in_base ? 1 : 0;
        sums[1] += in_base ? q : 0;
      }
      scaled_[slot] = s_out;
      weight_[slot] = w_out;
    }
  }

  // Sums over the block; every thread gets the totals.
  template <int N>
  __device__ void block_sum(ull (&v)[N]) {
    const int warp = static_cast<int>(threadIdx.x) >> 5;
#pragma unroll
    for (int n = 0; n < N; ++n) v[n] = warp_sum(v[n]);
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
      for (int n = 0; n < N; ++n) sh_.red[n][warp] = v[n];
    }
    __syncthreads();
#pragma unroll
    for (int n = 0; n < N; ++n) {
      ull total = 0;
      for (int w = 0; w < kWarps; ++w) total += sh_.red[n][w];
      v[n] = total;
    }
    __syncthreads();
  }

  // Publishes N values (the same in every thread) and collects every CTA's: afterwards
  // gathered(r, n, N) is value n of rank r, in every CTA.
  template <int N>
  __device__ void gather(const ull (&v)[N]) {
    if (threadIdx.x == 0) {
#pragma unroll
      for (int n = 0; n < N; ++n) sh_.xbuf[parity_][n] = v[n];
    }
    cluster_.sync();
    if (static_cast<int>(threadIdx.x) < ranks_ * N) {
      const int r = static_cast<int>(threadIdx.x) / N, n = static_cast<int>(threadIdx.x) % N;
      sh_.gathered[threadIdx.x] = cluster_.map_shared_rank(&sh_.xbuf[parity_][0], r)[n];
    }
    __syncthreads();
    parity_ ^= 1;
  }

  // Mass of this thread's float4 group `slot` over tokens with key >= lo_key.
  __device__ ull slot_mass(int slot, uint32_t lo_key) const {
    const float4 s = scaled_[slot], w = weight_[slot];
    ull m = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) m += sm::float_key(lane(s, e)) >= lo_key ? sm::fixed_weight(lane(w, e)) : 0;
    return m;
  }

  // Publishes this CTA's mass over key >= lo_key; gathered(r, 0, 1) is rank r's.
  __device__ void gather_mass(uint32_t lo_key) {
    ull m[1] = {0};
    for (int j = 0; j < tiles_; ++j) m[0] += slot_mass(j * kThreads + static_cast<int>(threadIdx.x), lo_key);
    block_sum(m);
    gather(m);
  }

  // The largest key k such that the weight (1 per token, or its mass) of tokens with key >= max(k,
  // lo_key) reaches `target`. The caller guarantees the total weight over key >= lo_key does.
  __device__ uint32_t radix_select(bool by_mass, uint32_t lo_key, ull target) {
    uint32_t prefix = 0;
    ull above = 0;  // weight of tokens whose key is above every key with the current prefix
    for (int pass = 0; pass < 4; ++pass) {
      const int shift = 24 - 8 * pass;
      const uint32_t high_mask = pass == 0 ? 0u : ~0u << (shift + 8);
      if (threadIdx.x < kBins) {
        sh_.hist[0][threadIdx.x] = 0;
        sh_.hist[1][threadIdx.x] = 0;
        sh_.hist[2][threadIdx.x] = 0;
      }
      __syncthreads();
      for (int j = 0; j < tiles_; ++j) {
        const int slot = j * kThreads + static_cast<int>(threadIdx.x);
        const float4 s = scaled_[slot];
        float4 w = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (by_mass) w = weight_[slot];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const uint32_t key = sm::float_key(lane(s, e));
          if (key < lo_key || ((key ^ prefix) & high_mask) != 0) continue;
          const uint32_t bin = (key >> shift) & 0xffu;
          if (!by_mass) {
            atomicAdd(&sh_.hist[0][bin], 1u);
            continue;
          }
          // Shared-memory atomics add 32 bits natively (64-bit ones are a compare-and-swap loop):
          // a mass < 2^41 goes in as three chunks, whose per-CTA sums (< 2^16 * 2^15) cannot wrap.
          const ull q = sm::fixed_weight(lane(w, e));
          const uint32_t c0 = static_cast<uint32_t>(q) & 0xffffu, c1 = static_cast<uint32_t>(q >> 16) & 0xffffu,
                         c2 = static_cast<uint32_t>(q >> 32);
          if (c0 != 0) atomicAdd(&sh_.hist[0][bin], c0);
          if (c1 != 0) atomicAdd(&sh_.hist[1][bin], c1);
          if (c2 != 0) atomicAdd(&sh_.hist[2][bin], c2);
        }
      }
      __syncthreads();
      ull* hist = sh_.xbuf[parity_];
      if (threadIdx.x < kBins) {
        hist[threadIdx.x] = sh_.hist[0][threadIdx.x] + (static_cast<ull>(sh_.hist[1][threadIdx.x]) << 16) +
                            (static_cast<ull>(sh_.hist[2][threadIdx.x]) << 32);
      }
      cluster_.sync();
      if (threadIdx.x < kBins) {
        ull total = 0;
        for (int r = 0; r < ranks_; ++r) total += cluster_.map_shared_rank(hist, r)[threadIdx.x];
        sh_.comb[threadIdx.x] = total;
      }
      __syncthreads();
      if (threadIdx.x < 32) pick_digit(above, target);
      __syncthreads();
      prefix |= sh_.digit << shift;
      above = sh_.above;
      parity_ ^= 1;
    }
    return prefix;
  }

  // The id of the token at offset u of this CTA's kept mass (key >= lo_key), scanning in id order:
  // (tile, warp) segments first, then the lanes of one segment, then one lane's four tokens.
  __device__ int locate(uint32_t lo_key, ull u) {
    const int lane_id = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    if (threadIdx.x == 0) sh_.found_id = -1;  // stays -1 only if u is past the mass: a bug, not data
    for (int j = 0; j < tiles_; ++j) {
      const ull m = warp_sum(slot_mass(j * kThreads + static_cast<int>(threadIdx.x), lo_key));
      if (lane_id == 0) sh_.seg[j * kWarps + warp] = m;
    }
    __syncthreads();
    if (warp == 0) {
      const int segments = tiles_ * kWarps;
      ull running = 0;
      int found = -1;
      for (int b = 0; b < segments && found < 0; b += 32) {
        const ull x = b + lane_id < segments ? sh_.seg[b + lane_id] : 0;
        ull incl = x;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
          const ull v = __shfl_up_sync(kFullMask, incl, offset);
          if (lane_id >= offset) incl += v;
        }
        const unsigned hit = __ballot_sync(kFullMask, running + incl > u);
        if (hit != 0) {
          const int l = __ffs(static_cast<int>(hit)) - 1;
          found = b + l;
          u -= running + __shfl_sync(kFullMask, incl - x, l);
        }
        running += __shfl_sync(kFullMask, incl, 31);
      }
      // found >= 0 since u < the CTA's kept mass. Now the lanes of segment `found`.
      if (found < 0) found = 0;
      const int slot = (found / kWarps) * kThreads + (found % kWarps) * 32 + lane_id;
      const ull m = slot_mass(slot, lo_key);
      ull incl = m;
#pragma unroll
      for (int offset = 1; offset < 32; offset <<= 1) {
        const ull v = __shfl_up_sync(kFullMask, incl, offset);
        if (lane_id >= offset) incl += v;
      }
      const unsigned hit = __ballot_sync(kFullMask, incl > u);
      if (lane_id == __ffs(static_cast<int>(hit)) - 1) {
        const float4 s = scaled_[slot], w = weight_[slot];
        ull acc = incl - m;
        int id = -1;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (id < 0 && sm::float_key(lane(s, e)) >= lo_key) {
            acc += sm::fixed_weight(lane(w, e));
            if (acc > u) id = static_cast<int>(base_ + static_cast<int64_t>(slot) * 4 + e);
          }
        }
        sh_.found_id = id;
      }
    }
    __syncthreads();
    return sh_.found_id;
  }

 private:
  // Warp 0: the largest digit d with above + sum_{b >= d} comb[b] >= target; lane l holds bins
  // 8l .. 8l + 7, a suffix scan over lanes finds the lane, that lane its bin.
  __device__ void pick_digit(ull above, ull target) {
    const int lane_id = static_cast<int>(threadIdx.x);
    ull bins[8];
    ull lane_total = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      bins[i] = sh_.comb[lane_id * 8 + i];
      lane_total += bins[i];
    }
    ull suffix = lane_total;  // bins of lanes >= this one
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const ull v = __shfl_down_sync(kFullMask, suffix, offset);
      if (lane_id + offset < 32) suffix += v;
    }
    const unsigned ballot = __ballot_sync(kFullMask, above + suffix >= target);
    if (lane_id == 31 - __clz(static_cast<int>(ballot))) {
      ull acc = above + suffix - lane_total;
      for (int i = 7; i >= 0; --i) {
        if (acc + bins[i] >= target) {
          sh_.digit = static_cast<uint32_t>(lane_id * 8 + i);
          sh_.above = acc;
          break;
        }
        acc += bins[i];
      }
    }
  }

  cg::cluster_group cluster_;
  Shared& sh_;
  float4* scaled_;  // [tiles * kThreads] raw, then scaled logits
  float4* weight_;  // [tiles * kThreads] relative weights
  int tiles_;
  int64_t vocab_;
  int64_t base_ = 0;
  int rank_ = 0, ranks_ = 1;
  int parity_ = 0;
};

__global__ void __launch_bounds__(kThreads, 1) sampling_kernel(KernelParams p) {
  extern __shared__ float4 dynamic_smem[];
  __shared__ Shared sh;
  const SamplingKernelArgs& a = p.args;
  const int64_t row = p.row_offset + blockIdx.y;
  const float* logits = a.logits + row * a.vocab;
  RowSampler rs(sh, dynamic_smem, dynamic_smem + p.tiles * kThreads, p.tiles, a.vocab);

  const float temperature = a.temperature[row];
  const bool want_logprob = a.out_logprobs != nullptr;
  float logit_max;
  int greedy;
  rs.load_and_argmax(logits, p.vec4, temperature != 0.0f || want_logprob, logit_max, greedy);

  int token = greedy;
  bool i_write = rs.rank() == 0;
  ull z = 0;
  if (temperature == 0.0f) {
    if (want_logprob) {
      ull mine[1] = {rs.raw_mass(logit_max)};
      rs.gather(mine);
      for (int r = 0; r < rs.ranks(); ++r) z += rs.gathered(r, 0, 1);
    }
  } else {
    const float scaled_max = sm::scaled_logit(logit_max, temperature);
    ull sums[3] = {0, 0, 0};
    rs.weigh(temperature, scaled_max, logit_max, a.min_p[row], want_logprob, sums);
    rs.block_sum(sums);
    rs.gather(sums);
    ull base_count = 0, base_mass = 0;
    for (int r = 0; r < rs.ranks(); ++r) {
      base_count += rs.gathered(r, 0, 3);
      base_mass += rs.gathered(r, 1, 3);
      z += rs.gathered(r, 2, 3);
    }
    if (base_mass > 0) {
      // This CTA's kept mass, the mass of the ranks before it (token-id order) and the row's.
      ull before = 0, mine = 0, total = 0;
      auto tally = [&](int n, int count) {
        before = mine = total = 0;
        for (int r = 0; r < rs.ranks(); ++r) {
          const ull v = rs.gathered(r, n, count);
          before += r < rs.rank() ? v : 0;
          mine = r == rs.rank() ? v : mine;
          total += v;
        }
      };
      tally(1, 3);
      uint32_t lo_key = kFirstFiniteKey;
      bool filtered = false;
      const int top_k = a.top_k[row];
      if (top_k > 0 && static_cast<ull>(top_k) < base_count) {
        lo_key = rs.radix_select(false, lo_key, static_cast<ull>(top_k));
        filtered = true;
      }
      const float top_p = a.top_p[row];
      if (top_p < 1.0f) {
        if (filtered) {
          rs.gather_mass(lo_key);
          tally(0, 1);
        }
        lo_key = rs.radix_select(true, lo_key, sm::top_p_target(top_p, total));
        filtered = true;
      }
      if (filtered) {
        rs.gather_mass(lo_key);
        tally(0, 1);
      }
      const ull bits = sm::sampling_random_bits(static_cast<uint64_t>(a.seed[row]), static_cast<uint64_t>(a.step[row]));
      const ull u = sm::draw_below(bits, total);
      i_write = before <= u && u < before + mine;
      if (i_write) {
        const int located = rs.locate(lo_key, u - before);
        token = located >= 0 ? located : greedy;
      }
    }
  }
  if (i_write && threadIdx.x == 0) {
    a.out_ids[row] = token;
    if (want_logprob) a.out_logprobs[row] = sm::token_logprob(logits[token], logit_max, z);
  }
  rs.finish();
}

}  // namespace

void launch_sampling_kernel(const SamplingKernelArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  // Layout from the vocabulary alone: the fewest tiles per CTA that fit the row in 8 CTAs.
  const int64_t per_cluster_tile = static_cast<int64_t>(kMaxCluster) * kTile;
  const int tiles = static_cast<int>((args.vocab + per_cluster_tile - 1) / per_cluster_tile);
  const int cluster =
      static_cast<int>((args.vocab + static_cast<int64_t>(tiles) * kTile - 1) / (static_cast<int64_t>(tiles) * kTile));
  const size_t smem = static_cast<size_t>(tiles) * kTile * 2 * sizeof(float);
  FG_CUDA_CHECK(
      cudaFuncSetAttribute(sampling_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));

  KernelParams p;
  p.args = args;
  p.tiles = tiles;
  p.vec4 = args.vocab % 4 == 0 && reinterpret_cast<uintptr_t>(args.logits) % 16 == 0;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = 1;
  constexpr int64_t kMaxGridY = 65535;
  for (int64_t first = 0; first < args.rows; first += kMaxGridY) {
    const int64_t rows = args.rows - first < kMaxGridY ? args.rows - first : kMaxGridY;
    p.row_offset = first;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(cluster), static_cast<unsigned>(rows), 1);
    config.blockDim = dim3(kThreads, 1, 1);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    FG_CUDA_CHECK(cudaLaunchKernelEx(&config, sampling_kernel, p));
    FG_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace fg::cuda
