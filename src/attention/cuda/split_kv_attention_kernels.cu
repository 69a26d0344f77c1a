// attention/cuda/split_kv_attention_kernels.cu — the `split_kv` kernel (flash-decoding for
// uniform decode batches, query length 1..4) and its launcher.
//
// A unit of work is (split s, request r, KV head h x row group): it walks positions
// [s * chunk(L), min(L, (s + 1) * chunk(L))) of request r (split_kv_plan: a function of L and a
// construction constant only). The grid holds at most as many CTAs as the GPU keeps resident: a
// small batch gets a CTA per (row group, split) the policy allows, a larger one has each CTA walk
// every grid-th of the batch's units, numbered split-major up to the largest split count in the
// batch, so that no CTA is launched only to find its split empty (with a CTA per allowed split, 30
// of 32 did at 512 of context, and each took an SM's slot for a while). A unit's 16 packed rows
// are (token, query head of h's GQA group) pairs, so a KV tile read from HBM serves the whole
// group. KV tiles of 64 positions are gathered through block_table into a 3-stage cp.async
// pipeline; each warp takes a 16-position slice of every tile with its own online softmax (bf16
// mma.sync, fp32 accumulation), and at the end the 4 warps' states are merged in shared memory in
// warp order. A request with a single split writes its bf16 output directly; otherwise the split
// writes its normalized fp32 partial output and log-sum-exp and counts itself in on its row
// group's arrival counter, and the CTA that brings the last split combines the row group's rows:
// per (token, query head), weights 2^(lse_s - max) over the request's splits, summed in split
// order from the workspace, so which CTA combines does not change the bits. Combining there
// rather than in a second kernel saves a launch per layer (a kernel's latency, 2-3 us, in a
// CUDA-graph decode step). Padded requests (seq_lens 0 or zero query tokens) and units past the
// request's split count or rows are skipped before writing or counting anything, so padded
// requests write nothing.
#include "attention/cuda/paged_kv_walk.h"
#include "attention/cuda/split_kv_attention_kernels.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_info.h"
#include "core/cuda/pdl.cuh"

namespace fg::attn {
namespace {

constexpr int kBN = kSplitKvTileN;
constexpr int kStages = kKvRingStages;
constexpr int kWarps = kSplitKvThreads / 32;
constexpr int kRows = kSplitKvRowsPerCta;
static_assert(kSplitKvMaxSplits <= 32, "the combine holds one split per lane");
static_assert(kWarps * 16 == kBN, "each warp owns a 16-position slice of a KV tile");

// What the kernel derives from a request's metadata.
struct RequestView {
  int q_begin, num_query, ctx;
  SplitKvPlan plan;
};

// The context a request's splits walk: its seq_len, never past its block table row. view_request
// and batch_max_splits must agree on it, or the loop would stop short of a request's last splits.
__device__ __forceinline__ int walked_context(const SplitKvParams& p, int seq_len) {
  return min(seq_len, p.max_blocks * p.block_size);
}

// False for a request that does no work: padded (seq_lens 0, zero query tokens) or outside the
// contract (more than kSplitKvMaxQueryLen query tokens; its rows are then not written).
__device__ __forceinline__ bool view_request(const SplitKvParams& p, int req, RequestView& v) {
  const int seq_len = p.seq_lens[req];
  if (seq_len <= 0) return false;
  v.q_begin = p.query_start_loc[req];
  v.num_query = p.query_start_loc[req + 1] - v.q_begin;
  if (v.num_query <= 0 || v.num_query > kSplitKvMaxQueryLen || v.q_begin < 0) return false;
  v.ctx = walked_context(p, seq_len);
  v.plan = split_kv_plan(v.ctx, p.max_splits, p.min_chunk, p.tile_splits);
  return true;
}

// Merges the splits of this CTA's rows m0 .. m0 + valid_rows - 1 (row m: token m / group, query
// head kv_head * group + m % group): one warp per row, rows to warps round-robin, lane s holding
// split s. Other CTAs wrote most of the partials, so they are read from L2.
template <int HD>
__device__ __forceinline__ void combine_splits(const SplitKvParams& p, const RequestView& v, int kv_head, int m0,
                                               int valid_rows, int group, int warp, int lane) {
  static_assert(HD <= 128, "a lane holds 4 columns of a row");
  const int64_t split_stride = static_cast<int64_t>(p.partial_rows) * p.num_heads;
  __nv_bfloat16* out = static_cast<__nv_bfloat16*>(p.out);
  for (int row = warp; row < valid_rows; row += kWarps) {
    const int m = m0 + row;
    const int token = v.q_begin + m / group;
    if (token >= p.num_tokens) continue;  // warp-uniform
    const int head = kv_head * group + m % group;
    const int64_t row_index = static_cast<int64_t>(token) * p.num_heads + head;
    const float lse =
        lane < v.plan.num_splits ? __ldcg(p.partial_lse + lane * split_stride + row_index) : -INFINITY;
    float mx = lse;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, o));
    const float base = mx == -INFINITY ? 0.0f : mx;
    const float w = exp2f(lse - base);  // 0 for lanes past the split count
    float total = w;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(kFullMask, total, o);
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;

    const int c = lane * 4;
    const bool active = c < HD;  // every lane runs every shuffle
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    // Eight splits' partial rows in flight at once (the default unrolling gave four, so 32 splits
    // took eight round trips to L2 per row); the sums stay in split order. On an H200 (2026-12-01):
    // batch 1 4.4-9.9% faster at 4k-32k of context. Fewer than 8 splits fall to the remainder loop, one
    // load at a time: 1k of context (4 splits) became 2-4% slower.
#pragma unroll 8
    for (int s = 0; s < v.plan.num_splits; ++s) {  // fixed split order
      const float ws = __shfl_sync(kFullMask, w, s);
      if (!active) continue;
      const float4 x = __ldcg(reinterpret_cast<const float4*>(p.partial_out + (s * split_stride + row_index) * HD + c));
      acc.x += ws * x.x;
      acc.y += ws * x.y;
      acc.z += ws * x.z;
      acc.w += ws * x.w;
    }
    if (active) {
      const uint2 packed = make_uint2(pack_bf16(acc.x * inv, acc.y * inv), pack_bf16(acc.z * inv, acc.w * inv));
      *reinterpret_cast<uint2*>(out + row_index * HD + c) = packed;
    }
  }
}

// Q [16][HD] bf16, K [3][64][HD], V [3][64][HD]; after the walk the KV area holds the warps'
// states for the merge (store_slice_state).
//
// Walks split `split` of request `req` for row group `row` (KV head kv_head, packed rows from m0;
// row indexes the request's arrival counters) and writes its output (one split) or its partial and
// arrival, combining the row group if it brings the last split. PDL: the split's plan, its block
// ids and its first tiles' earlier rows are requested before the wait (kReadsBeforePdlWait), Q and
// the step's rows after it.
template <int HD, bool kFp8>
__device__ __forceinline__ void walk_split(const SplitKvParams& p, const RequestView& v, int split, int req, int row,
                                           int row_groups_per_req, int kv_head, int m0, int group,
                                           unsigned char* smem) {
  constexpr int kChunks = HD / 8;
  constexpr uint32_t kStageBytes = kBN * HD * 2;
  static_assert(slice_state_bytes<HD, kWarps>() <= 2 * kStages * kStageBytes, "the merge fits the KV area");
  const int rows = v.num_query * group;
  const int valid_rows = min(kRows, rows - m0);
  const int kv_begin = split * v.plan.chunk;
  const int kv_end = min(v.ctx, kv_begin + v.plan.chunk);
  const int num_tiles = (kv_end - kv_begin + kBN - 1) / kBN;
  const int before = v.ctx - v.num_query;  // positions before this step's tokens
  // Row m (token m / group) sees positions [0, before + m / group]; the last row sees the most.
  const int last_h = before + (m0 + valid_rows - 1) / group + 1;
  const int walk_end = min(kv_end, last_h);

  const uint32_t sq = smem_addr(smem);
  const uint32_t sk0 = sq + kRows * HD * 2;
  const uint32_t sv0 = sk0 + kStages * kStageBytes;
  PagedKvLoader<HD, kBN, kSplitKvThreads, kFp8> kv;
  kv.init(p.k_cache, p.v_cache, kv_head, p.num_kv_heads, p.block_table + static_cast<int64_t>(req) * p.max_blocks,
          p.block_size, p.block_magic);
  start_ring_before_wait(kv, kv_begin, kv_end, num_tiles, before, sk0, sv0);
  fg::cuda::wait_for_prerequisite_grids();
  {
    const __nv_bfloat16* q = static_cast<const __nv_bfloat16*>(p.q);
#pragma unroll
    for (int i = 0; i < (kRows * kChunks + kSplitKvThreads - 1) / kSplitKvThreads; ++i) {
      const int idx = threadIdx.x + i * kSplitKvThreads;
      const int row = idx / kChunks, chunk = idx % kChunks;
      if (row >= kRows) break;
      const int m = m0 + row;
      const int token = v.q_begin + m / group;
      const int head = kv_head * group + m % group;
      const bool valid = row < valid_rows && token < p.num_tokens;
      const int64_t offset = valid ? (static_cast<int64_t>(token) * p.num_heads + head) * HD + chunk * 8 : 0;
      cp_async_16(sq + swizzle<HD>(row, chunk), q + offset, valid);
    }
  }
  finish_ring_start(kv, kv_begin, kv_end, num_tiles, before, sk0, sv0);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2;
  int horizon[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = g + 8 * r;
    horizon[r] = row < valid_rows ? before + (m0 + row) / group + 1 : last_h;  // padding rows: finite, unstored
  }
  float o[HD / 8][4], m_run[2], l_run[2];
  walk_in_slices<HD, kSplitKvThreads>(kv, sq, sk0, sv0, kv_begin, kv_end, num_tiles, walk_end, horizon, p.scale_log2,
                                      o, m_run, l_run);

  float* state = reinterpret_cast<float*>(smem + kRows * HD * 2);
  store_slice_state<HD, kWarps>(state, o, m_run, l_run, warp, lane);
  __syncthreads();

  __nv_bfloat16* out = static_cast<__nv_bfloat16*>(p.out);
  for (int idx = threadIdx.x; idx < kRows * (HD / 4); idx += kSplitKvThreads) {
    const int row = idx / (HD / 4), c4 = idx % (HD / 4);
    if (row >= valid_rows) continue;
    const int m = m0 + row;
    const int token = v.q_begin + m / group;
    if (token >= p.num_tokens) continue;
    const int head = kv_head * group + m % group;
    float lse;
    float4 merged = merge_slice_row<HD, kWarps>(state, row, c4, lse);
    // An e4m3 cache's v scale, on the split's output: the splits' combine is linear in them.
    if constexpr (kFp8) merged = make_float4(merged.x * p.v_scale, merged.y * p.v_scale, merged.z * p.v_scale,
                                             merged.w * p.v_scale);
    const int64_t row_index = static_cast<int64_t>(token) * p.num_heads + head;
    if (v.plan.num_splits == 1) {
      const uint2 packed = make_uint2(pack_bf16(merged.x, merged.y), pack_bf16(merged.z, merged.w));
      *reinterpret_cast<uint2*>(out + row_index * HD + c4 * 4) = packed;
    } else {
      const int64_t partial_row = static_cast<int64_t>(split) * p.partial_rows * p.num_heads + row_index;
      *reinterpret_cast<float4*>(p.partial_out + partial_row * HD + c4 * 4) = merged;
      if (c4 == 0) p.partial_lse[partial_row] = lse;
    }
  }
  if (v.plan.num_splits == 1) return;

  // Count this split in. Each thread's fence orders its partial rows before the barrier, and so
  // before thread 0's count; the CTA whose count completes the row group combines every split.
  __shared__ int brought_last_split;
  int* row_group_arrivals = p.arrivals + static_cast<int64_t>(req) * row_groups_per_req + row;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) brought_last_split = atomicAdd(row_group_arrivals, 1) == v.plan.num_splits - 1;
  __syncthreads();
  if (!brought_last_split) return;
  __threadfence();                                // the other splits' partials are read after their counts
  if (threadIdx.x == 0) *row_group_arrivals = 0;  // re-armed for the next launch or graph replay
  combine_splits<HD>(p, v, kv_head, m0, valid_rows, group, warp, lane);
}

// The largest split count of the batch's requests (0 for an all-padding batch), from one warp.
__device__ __forceinline__ int batch_max_splits(const SplitKvParams& p) {
  int most = 0;
  for (int r = threadIdx.x; r < p.num_reqs; r += 32) {
    const SplitKvPlan plan = split_kv_plan(walked_context(p, p.seq_lens[r]), p.max_splits, p.min_chunk, p.tile_splits);
    most = max(most, plan.num_splits);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) most = max(most, __shfl_xor_sync(kFullMask, most, o));
  return most;
}

// kSeveralUnits false: the grid is a CTA for every (row group, split) the policy allows; CTA u
// walks unit u (numbered as the loop's), or nothing, and need not know the rest of the batch.
// true: fewer CTAs than that (the resident ones), each walking every grid-th of the batch's
// units, numbered split-major up to the largest split count in the batch. (Numbered
// row-major instead, so that a row group's splits run side by side, long contexts took 1.1-1.9x as
// long on an H200, 2026-12-01.) Two kernels rather than one with both paths: the one-unit path kept in
// the same kernel as the loop (220 registers rather than 163 at hd 128) ran 1.4-3.4% slower at
// batch 1 and 4k-16k of context; as its own kernel, level with a grid of only it.
template <int HD, bool kSeveralUnits, bool kFp8>
__global__ void __launch_bounds__(kSplitKvThreads) split_kv_kernel(const SplitKvParams p, int row_groups) {
  extern __shared__ __align__(128) unsigned char smem[];
  // PDL: the next kernel (o_proj) may launch now. What this grid reads of the previous kernel's
  // work (RoPE and the cache write) is Q and this step's own KV rows; the step's metadata was
  // copied before the chain's first kernel started, and every other KV row by an earlier step.
  // Every CTA waits before it exits, so that its completion implies the previous grid's.
  fg::cuda::allow_dependent_grids();

  const int group = p.num_heads / p.num_kv_heads;
  const int per_req = p.num_kv_heads * row_groups;  // row groups of a request
  if constexpr (!kSeveralUnits) {
    // Numbered split-major like the loop's units, so that the CTAs with work (the low splits) come
    // first and the block scheduler spreads them one per SM; numbered row-major, a batch of 4 or 8
    // whose requests use fewer splits than the cap put two busy CTAs on an SM while others stood
    // idle (H200, 2026-12-01: batch 8 at 512 of context 10.0 us against 9.0 through the loop).
    const int rows = p.num_reqs * per_req;
    const int split = blockIdx.x / rows, req = blockIdx.x % rows / per_req, row = blockIdx.x % per_req;
    const int kv_head = row / row_groups, m0 = (row % row_groups) * kRows;
    RequestView v;
    if (!view_request(p, req, v) || split >= v.plan.num_splits || m0 >= v.num_query * group) {
      fg::cuda::wait_for_prerequisite_grids();
      return;
    }
    walk_split<HD, kFp8>(p, v, split, req, row, per_req, kv_head, m0, group, smem);
  } else {
    __shared__ int most_splits;
    if (threadIdx.x < 32) {
      const int most = batch_max_splits(p);
      if (threadIdx.x == 0) most_splits = most;
    }
    __syncthreads();
    const int rows = p.num_reqs * per_req;
    const int units = most_splits * rows;
    bool walked = false;
    for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
      const int split = unit / rows, req = unit % rows / per_req, row = unit % per_req;
      const int kv_head = row / row_groups, m0 = (row % row_groups) * kRows;
      RequestView v;
      if (!view_request(p, req, v) || split >= v.plan.num_splits || m0 >= v.num_query * group) continue;
      if (walked) __syncthreads();  // every thread is done with the last unit's shared memory
      walk_split<HD, kFp8>(p, v, split, req, row, per_req, kv_head, m0, group, smem);
      walked = true;
    }
    if (!walked) fg::cuda::wait_for_prerequisite_grids();
  }
}

template <int HD, bool kFp8>
void launch(const SplitKvParams& p, int row_groups, cudaStream_t stream) {
  const int64_t allowed = int64_t{p.max_splits} * p.num_reqs * p.num_kv_heads * row_groups;  // (row group, split)s
  const size_t smem = split_kv_smem_bytes(HD);
  if (allowed <= p.resident_ctas)
    fg::cuda::launch_with_pdl(split_kv_kernel<HD, false, kFp8>, dim3(static_cast<unsigned>(allowed)),
                              dim3(kSplitKvThreads), smem, stream, p, row_groups);
  else
    fg::cuda::launch_with_pdl(split_kv_kernel<HD, true, kFp8>, dim3(static_cast<unsigned>(p.resident_ctas)),
                              dim3(kSplitKvThreads), smem, stream, p, row_groups);
}

template <int HD>
void launch(const SplitKvParams& p, int row_groups, cudaStream_t stream) {
  if (p.kv_fp8) launch<HD, true>(p, row_groups, stream);
  else launch<HD, false>(p, row_groups, stream);
}

// Raises the kernel's shared-memory limit and returns how many of its CTAs the GPU holds at once.
template <int HD>
int prepare_head_dim() {
  for (const void* kernel : {reinterpret_cast<const void*>(split_kv_kernel<HD, false, false>),
                             reinterpret_cast<const void*>(split_kv_kernel<HD, true, false>),
                             reinterpret_cast<const void*>(split_kv_kernel<HD, false, true>),
                             reinterpret_cast<const void*>(split_kv_kernel<HD, true, true>)})
    FG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, split_kv_smem_bytes(HD)));
  int per_sm = 0;
  const int sms = fg::cuda::current_device_sm_count();
  FG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, split_kv_kernel<HD, true, false>, kSplitKvThreads,
                                                              split_kv_smem_bytes(HD)));
  return sms * (per_sm > 0 ? per_sm : 1);
}

}  // namespace

int split_kv_attention_prepare(int head_dim) {
  return head_dim == 64 ? prepare_head_dim<64>() : prepare_head_dim<128>();
}

void launch_split_kv_attention(const SplitKvParams& p, cudaStream_t stream) {
  if (p.num_reqs == 0 || p.num_tokens == 0) return;  // an empty step: a shape, the same decision when captured
  const int max_query = p.num_tokens < kSplitKvMaxQueryLen ? p.num_tokens : kSplitKvMaxQueryLen;
  const int row_groups = split_kv_row_groups(max_query, p.num_heads / p.num_kv_heads);
  switch (p.head_dim) {
    case 64: launch<64>(p, row_groups, stream); break;
    case 128: launch<128>(p, row_groups, stream); break;
    default: FG_CUDA_CHECK(cudaErrorInvalidValue);  // refused at construction
  }
}

}  // namespace fg::attn
