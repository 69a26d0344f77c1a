// backend/cuda/gemv_chain_kernels.cu — see gemv_chain_kernels.h.
#include "backend/cuda/bf16_vec.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_info.h"
#include "backend/cuda/gemv_chain_kernels.h"
#include "backend/cuda/grid_barrier.cuh"
#include "core/cuda/pdl.cuh"
#include "backend/cuda/streaming_load.cuh"

#include <algorithm>

namespace fg::cuda {

namespace {

// 16-byte weight loads per lane in a group. Two groups are in flight (8 KB per warp) while a warp
// sums a row: the most that 64 registers a thread hold beside the sums.
constexpr int kGroup = kGemvChainGroup;
static_assert(kGemvChainColsMultiple == 32 * 8 * kGroup, "a row is whole load groups of every lane");

__device__ __forceinline__ void load_group(const uint4* row, int chunk, int lane, uint4 (&v)[kGroup]) {
#pragma unroll
  for (int j = 0; j < kGroup; ++j) v[j] = load_streaming(row + (chunk + j) * 32 + lane);
}

// acc + the eight products of w and x, in element order (bf16 -> fp32 is a shift).
__device__ __forceinline__ float dot8(const uint4& w, const uint4& x, float acc) {
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w}, xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc = fmaf(__uint_as_float(ws[i] << 16), __uint_as_float(xs[i] << 16), acc);
    acc = fmaf(__uint_as_float(ws[i] & 0xffff0000u), __uint_as_float(xs[i] & 0xffff0000u), acc);
  }
  return acc;
}

// A row's sum over its chunks [c0, c1) (multiples of kGroup) against the input in shared memory:
// lane l takes the row's 16-byte vectors c x 32 + l. Two load groups are in flight, in buffers `a`
// and `b` that take turns (moving a group from one to the other would wait for its loads); `ready`
// of them (0-2) were requested already: a with chunks c0.., b with c0 + kGroup... Every lane gets
// the sum.
__device__ __forceinline__ float row_dot(const uint4* row, const uint4* x, int c0, int c1, int lane, uint4 (&a)[kGroup],
                                         uint4 (&b)[kGroup], int ready) {
  if (ready < 1) load_group(row, c0, lane, a);
  if (ready < 2 && c0 + kGroup < c1) load_group(row, c0 + kGroup, lane, b);
  float acc = 0.0f;
#pragma unroll 1
  for (int c = c0; c < c1; c += 2 * kGroup) {
#pragma unroll
    for (int j = 0; j < kGroup; ++j) acc = dot8(a[j], x[(c + j) * 32 + lane], acc);
    if (c + 2 * kGroup < c1) load_group(row, c + 2 * kGroup, lane, a);
    if (c + kGroup < c1) {
#pragma unroll
      for (int j = 0; j < kGroup; ++j) acc = dot8(b[j], x[(c + kGroup + j) * 32 + lane], acc);
      if (c + 3 * kGroup < c1) load_group(row, c + 3 * kGroup, lane, b);
    }
  }
  return warp_sum(acc);
}

// What a phase stores for a unit: out[unit] from its sum (gated: from its gate and up sums).
__device__ __forceinline__ void store_unit(const GemvPhase& ph, int64_t unit, float gate, float sum) {
  if (ph.store == GemvStore::kSiluGated) {
    const float g = bf16_round(gate), u = bf16_round(sum);
    ph.out[unit] = __float2bfloat16_rn(g / (1.0f + __expf(-g)) * u);
  } else {
    const float base = ph.store == GemvStore::kAddTo ? __bfloat162float(__ldcg(ph.out + unit)) : 0.0f;
    ph.out[unit] = __float2bfloat16_rn(base + sum);
  }
}

__device__ __forceinline__ void record(unsigned long long* timeline, int phase, int event) {
  if (timeline == nullptr || threadIdx.x != 0) return;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  timeline[(static_cast<int64_t>(phase) * gridDim.x + blockIdx.x) * kGemvEvents + event] = now;
}

// kPersistent: phases [first, last) with the grid barrier between them; else phase `first` alone,
// after the launch before (PDL). A unit is a row, or a gated pair (gate row j, up row h + j). Where
// the units leave warps idle (fewer rows than the grid has warps), `split` warps of a block share a
// unit, each summing a contiguous part of its chunks, and the parts meet in shared memory in part
// order. A batch is the rows_per_block units a block sums at once: block b sums batch b, then
// batches b + blocks, b + 2 blocks, ... or, `dynamic`, whichever batch its phase's counter
// (counters[1 + p]) hands out next, so that blocks that stream faster take more. Either block size
// gives an SM 32 warps of 64 registers.
template <bool kPersistent, int kThreads>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
    gemv_chain_kernel(const GemvPhase* phases, int first, int last, int preload_groups, bool dynamic,
                      unsigned* counters, unsigned long long* timeline) {
  extern __shared__ uint4 x_shared[];  // the phase's input
  constexpr int kWarps = kThreads / 32;
  __shared__ float parts[2][kWarps];  // split units: each warp's sums (gated: gate, up)
  __shared__ int next_batch[2];       // dynamic: the block's next batch, by the parity of its batches
  allow_dependent_grids();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = gridDim.x * kWarps;
  const int end = kPersistent ? last : first + 1;  // chained: one phase, known to the compiler
#pragma unroll 1
  for (int p = first; p < end; ++p) {
    const GemvPhase& ph = phases[p];  // written before the launch; its fields are read where needed
    const int chunks = ph.cols / (32 * 8);
    const bool gated = ph.store == GemvStore::kSiluGated;
    const int units = gated ? ph.rows / 2 : ph.rows;
    int split = 1;
    while (split < kWarps && int64_t{units} * split * 2 <= warps && chunks / kGroup % (split * 2) == 0) split *= 2;
    const int rows_per_block = kWarps / split, part = warp % split;
    const int c0 = part * (chunks / split), c1 = c0 + chunks / split;
    const int batches = (units + rows_per_block - 1) / rows_per_block;  // a batch: the units a block sums at once
    auto unit_in = [&](int batch) { return int64_t{batch} * rows_per_block + warp / split; };
    const auto* w = reinterpret_cast<const uint4*>(ph.w);
    auto row_of = [&](int64_t r) { return w + r * chunks * 32; };
    uint4 a[kGroup], b[kGroup];
    int ready = 0;
    int batch = blockIdx.x;        // the first batch is the block's own; later ones as `dynamic` says
    if (unit_in(batch) < units) {  // the weights depend on nothing: the first loads go before the wait
      load_group(row_of(unit_in(batch)), c0, lane, a);
      if (preload_groups > 1 && c0 + kGroup < c1) load_group(row_of(unit_in(batch)), c0 + kGroup, lane, b);
      ready = preload_groups;
    }
    if (p == first)
      wait_for_prerequisite_grids();
    else
      grid_barrier_wait(counters, static_cast<unsigned>(p - first) * gridDim.x);
    record(timeline, p, kGemvWaited);
    // The input, written by the phase before: read through L2, not the read-only path.
    const auto* in = reinterpret_cast<const uint4*>(ph.in);
    for (int i = threadIdx.x; i < ph.cols / 8; i += kThreads) x_shared[i] = __ldcg(in + i);
    __syncthreads();
    record(timeline, p, kGemvInputReady);
#pragma unroll 1
    for (int i = 0; batch < batches; ++i) {
      // Dynamic: the block's next batch is asked for now and read after this one.
      if (dynamic && threadIdx.x == 0)
        next_batch[i & 1] = static_cast<int>(gridDim.x + atomicAdd(&counters[1 + p], 1u));
      const int64_t unit = unit_in(batch);
      float sum = 0.0f, gate = 0.0f;  // the row's; gated, the up row's and the gate row's
      if (unit < units) {
#pragma unroll 1
        for (int half = 0; half < (gated ? 2 : 1); ++half) {  // one call site: fewer registers
          gate = sum;
          sum = row_dot(row_of(unit + half * units), x_shared, c0, c1, lane, a, b, ready);
          ready = 0;
        }
      }
      if (split > 1) {  // the same for the whole block: every warp meets here
        if (lane == 0) {
          parts[0][warp] = gate;
          parts[1][warp] = sum;
        }
        __syncthreads();
        if (part == 0) {
          gate = parts[0][warp];
          sum = parts[1][warp];
          for (int q = 1; q < split; ++q) {
            gate += parts[0][warp + q];
            sum += parts[1][warp + q];
          }
        }
        __syncthreads();  // parts is free for the next batch
      }
      if (lane == 0 && part == 0 && unit < units) store_unit(ph, unit, gate, sum);
      if (dynamic) {
        __syncthreads();
        batch = next_batch[i & 1];
      } else {
        batch += gridDim.x;
      }
    }
    if (timeline != nullptr) {
      __syncthreads();
      record(timeline, p, kGemvDone);
    }
    if (kPersistent) grid_barrier_arrive(counters);  // its __syncthreads also frees x_shared
  }
}

// The shared memory the phases need (their largest input); refuses shapes the kernel cannot take.
size_t check_phases(const GemvPhase* host_phases, int count) {
  int max_cols = 0;
  for (int p = 0; p < count; ++p) {
    const GemvPhase& ph = host_phases[p];
    const bool bad_shape = ph.rows <= 0 || ph.cols <= 0 || ph.cols % kGemvChainColsMultiple != 0 ||
                           (ph.store == GemvStore::kSiluGated && ph.rows % 2 != 0);
    const bool misaligned = (reinterpret_cast<uintptr_t>(ph.w) | reinterpret_cast<uintptr_t>(ph.in)) % 16 != 0;
    // (fmt does not compile under nvcc: the error is CUDA's own)
    if (bad_shape || misaligned || ph.out == nullptr) FG_CUDA_CHECK(cudaErrorInvalidValue);
    max_cols = std::max(max_cols, ph.cols);
  }
  return static_cast<size_t>(max_cols) * 2;
}

template <bool kPersistent, int kThreads>
void launch_kernel(const GemvPhase* phases, int first, int last, const GemvChainConfig& config, size_t shared_bytes,
                   unsigned* counters, cudaStream_t stream) {
  auto* kernel = gemv_chain_kernel<kPersistent, kThreads>;
  FG_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)));
  if (kPersistent) {
    // A block that waits for one that never starts would wait forever.
    int resident = 0;
    FG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, shared_bytes));
    if (resident < 1024 / kThreads) FG_CUDA_CHECK(cudaErrorCooperativeLaunchTooLarge);
  }
  const int blocks = gemv_chain_blocks(config, current_device_sm_count());
  launch_with_pdl(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                  shared_bytes, stream, phases, first, last, config.preload_groups, config.dynamic, counters,
                  config.timeline);
}

template <bool kPersistent>
void launch(const GemvPhase* phases, int first, int last, const GemvChainConfig& config, size_t shared_bytes,
            unsigned* counters, cudaStream_t stream) {
  if (config.preload_groups < 1 || config.preload_groups > 2) FG_CUDA_CHECK(cudaErrorInvalidValue);
  if (config.threads == 256)
    launch_kernel<kPersistent, 256>(phases, first, last, config, shared_bytes, counters, stream);
  else if (config.threads == 1024)
    launch_kernel<kPersistent, 1024>(phases, first, last, config, shared_bytes, counters, stream);
  else
    FG_CUDA_CHECK(cudaErrorInvalidValue);
}

}  // namespace

void launch_gemv_chain_persistent(const GemvPhase* phases, const GemvPhase* host_phases, int count,
                                  const GemvChainConfig& config, unsigned* counters, cudaStream_t stream) {
  const size_t shared_bytes = check_phases(host_phases, count);
  FG_CUDA_CHECK(cudaMemsetAsync(counters, 0, (count + 1) * sizeof(unsigned), stream));
  launch<true>(phases, 0, count, config, shared_bytes, counters, stream);
}

void launch_gemv_chain_chained(const GemvPhase* phases, const GemvPhase* host_phases, int count,
                               const GemvChainConfig& config, unsigned* counters, cudaStream_t stream) {
  const size_t shared_bytes = check_phases(host_phases, count);
  FG_CUDA_CHECK(cudaMemsetAsync(counters, 0, (count + 1) * sizeof(unsigned), stream));
  for (int p = 0; p < count; ++p) launch<false>(phases, p, p + 1, config, shared_bytes, counters, stream);
}

}  // namespace fg::cuda
