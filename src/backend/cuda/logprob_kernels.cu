// backend/cuda/logprob_kernels.cu — raw logprobs (L_max, Z, top n) and the sampled token's logprob,
// with the per-token formulas of sampling_math.h, exactly as the CPU reference computes them.
#include "core/cuda/cuda_check.h"
#include "backend/cuda/logprob_kernels.h"
#include "sampling/sampling_math.h"

namespace fg::cuda {

namespace {

namespace sm = fg::sampling;
using ull = unsigned long long;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kSampledThreads = 128;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ ull warp_max(ull x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const ull other = __shfl_xor_sync(kFullMask, x, offset);
    x = other > x ? other : x;
  }
  return x;
}

__device__ __forceinline__ ull warp_sum(ull x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

__global__ void __launch_bounds__(kThreads) raw_logprobs_kernel(RawLogprobKernelArgs a) {
  __shared__ ull partial[kWarps];
  __shared__ ull winners[kMaxTopLogprobs];
  const int64_t row = blockIdx.x;
  const int n = a.num_logprobs[row];
  if (n < 0) return;  // the whole block leaves: no barrier is skipped by only some threads
  const int keep = n < 1 ? 1 : (n > kMaxTopLogprobs ? kMaxTopLogprobs : n);
  const float* logits = a.logits + row * a.vocab;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;

  // This thread's best `keep` ranks, largest first; `floor` is the smallest once the list is full.
  ull list[kMaxTopLogprobs];
  int count = 0;
  ull floor = 0;
  for (int64_t i = threadIdx.x; i < a.vocab; i += kThreads) {
    const ull rank = sm::logprob_rank(logits[i], static_cast<uint32_t>(i));
    if (count == keep && rank <= floor) continue;
    int j = count < keep ? count++ : keep - 1;
    while (j > 0 && list[j - 1] < rank) {
      list[j] = list[j - 1];
      --j;
    }
    list[j] = rank;
    floor = list[count - 1];
  }

  // The block's best `keep`, one per round: the largest head over all threads' lists. Ranks are
  // distinct, so exactly one thread owns the winner and advances; 0 means every list is spent.
  int head = 0;
  for (int k = 0; k < keep; ++k) {
    const ull mine = head < count ? list[head] : 0ull;
    const ull warp_best = warp_max(mine);
    if (lane == 0) partial[warp] = warp_best;
    __syncthreads();
    ull best = 0;
    for (int w = 0; w < kWarps; ++w) best = partial[w] > best ? partial[w] : best;
    if (best != 0 && mine == best) ++head;
    if (threadIdx.x == 0) winners[k] = best;
    __syncthreads();
  }

  // L_max from the best-ranked token (vocab >= 1, so winners[0] names a token), then Z.
  const float logit_max = sm::logprob_max_from_best(logits[sm::logprob_rank_id(winners[0])]);
  ull z = 0;
  for (int64_t i = threadIdx.x; i < a.vocab; i += kThreads)
    z += sm::fixed_weight(sm::exp_det(sm::fsub(logits[i], logit_max)));
  z = warp_sum(z);
  if (lane == 0) partial[warp] = z;
  __syncthreads();
  z = 0;
  for (int w = 0; w < kWarps; ++w) z += partial[w];

  if (threadIdx.x == 0) {
    a.logit_max[row] = logit_max;
    a.mass[row] = static_cast<int64_t>(z);
  }
  const int written = static_cast<int64_t>(n) < a.vocab ? n : static_cast<int>(a.vocab);
  if (static_cast<int>(threadIdx.x) < written) {
    const int32_t id = sm::logprob_rank_id(winners[threadIdx.x]);
    a.top_ids[row * kMaxTopLogprobs + threadIdx.x] = id;
    a.top_logprobs[row * kMaxTopLogprobs + threadIdx.x] = sm::token_logprob(logits[id], logit_max, z);
  }
}

// The entry of `token` in entries [first, last) (clamped to the capacity) into *found; tokens of a
// list are distinct, so at most one thread writes.
__device__ __forceinline__ void find_entry(const int2* entries, int64_t first, int64_t last, int64_t capacity,
                                           int32_t token, int* found) {
  const int64_t begin = first < 0 ? 0 : first, end = last > capacity ? capacity : last;
  for (int64_t e = begin + threadIdx.x; e < end; e += kSampledThreads)
    if (entries[e].x == token) *found = static_cast<int>(e);
}

__global__ void __launch_bounds__(kSampledThreads) sampled_logprobs_kernel(SampledLogprobKernelArgs a) {
  __shared__ int found_penalty, found_bias;
  const int64_t row = blockIdx.x;
  if (a.num_logprobs[row] < 0) return;
  const int32_t token = a.ids[row];
  if (threadIdx.x == 0) found_penalty = found_bias = -1;
  __syncthreads();
  const int2* entries = reinterpret_cast<const int2*>(a.entries);
  find_entry(entries, a.offsets[row], a.offsets[row + 1], a.capacity, token, &found_penalty);
  if (a.bias_offsets != nullptr)
    find_entry(entries, a.bias_offsets[row], a.bias_offsets[row + 1], a.capacity, token, &found_bias);
  __syncthreads();
  if (threadIdx.x == 0) {
    // The raw logit: saved by the bias entry, which ran first; else by the penalty entry.
    const int found = found_bias >= 0 ? found_bias : found_penalty;
    const bool in_vocab = token >= 0 && token < a.vocab;
    const float raw = found >= 0 ? a.original[found]
                      : in_vocab   ? a.logits[row * a.vocab + token]
                                   : __int_as_float(0x7fc00000);  // NaN: not a token (a sampler bug)
    a.sampled[row] = sm::token_logprob(raw, a.logit_max[row], static_cast<ull>(a.mass[row]));
  }
}

}  // namespace

void launch_raw_logprobs(const RawLogprobKernelArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  raw_logprobs_kernel<<<static_cast<unsigned>(args.rows), kThreads, 0, stream>>>(args);
  FG_CUDA_CHECK(cudaGetLastError());
}

void launch_sampled_logprobs(const SampledLogprobKernelArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  sampled_logprobs_kernel<<<static_cast<unsigned>(args.rows), kSampledThreads, 0, stream>>>(args);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::cuda
