// backend/cuda/penalty_kernels.cu — logit biases, then penalties, in place: one block per row, one
// thread per list entry. Tokens of a row's list are distinct, so no two threads of a pass touch one
// logit; a barrier between the passes orders a token listed in both.
#include "core/cuda/cuda_check.h"
#include "backend/cuda/penalty_kernels.h"
#include "sampling/sampling_math.h"

namespace fg::cuda {

namespace {

constexpr int kThreads = 128;

// Entries [first, last) of a row clamped to the capacity, so that a bad list cannot write outside.
__device__ __forceinline__ void clamp_range(int64_t first, int64_t last, int64_t capacity, int64_t& begin,
                                            int64_t& end) {
  begin = first < 0 ? 0 : first;
  end = last > capacity ? capacity : last;
}

__global__ void __launch_bounds__(kThreads) apply_penalties_kernel(PenaltyKernelArgs a) {
  const int64_t row = blockIdx.x;
  float* logits = a.logits + row * a.vocab;
  const int2* entries = reinterpret_cast<const int2*>(a.entries);
  if (a.bias_offsets != nullptr) {  // the same for every thread: the barrier below is reached by all
    int64_t begin, end;
    clamp_range(a.bias_offsets[row], a.bias_offsets[row + 1], a.capacity, begin, end);
    for (int64_t e = begin + threadIdx.x; e < end; e += kThreads) {
      const int2 entry = entries[e];  // (token, bias bits)
      if (entry.x < 0 || entry.x >= a.vocab) continue;
      const float raw = logits[entry.x];
      a.original[e] = raw;
      logits[entry.x] = fg::sampling::biased_logit(raw, entry.y);
    }
    __syncthreads();  // a token biased and penalized is penalized from its biased logit
  }
  int64_t begin, end;
  clamp_range(a.offsets[row], a.offsets[row + 1], a.capacity, begin, end);
  if (begin >= end) return;
  const float repetition = a.repetition_penalty[row];
  const float presence = a.presence_penalty[row];
  const float frequency = a.frequency_penalty[row];
  for (int64_t e = begin + threadIdx.x; e < end; e += kThreads) {
    const int2 entry = entries[e];  // (token, output count)
    if (entry.x < 0 || entry.x >= a.vocab) continue;
    const float raw = logits[entry.x];
    a.original[e] = raw;
    logits[entry.x] = fg::sampling::penalized_logit(raw, repetition, frequency, presence, entry.y);
  }
}

}  // namespace

void launch_apply_penalties(const PenaltyKernelArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  apply_penalties_kernel<<<static_cast<unsigned>(args.rows), kThreads, 0, stream>>>(args);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::cuda
