// backend/cuda/penalty_kernels.cu — penalties in place: one block per row, one thread per list
// entry. Tokens of a row's list are distinct, so no two threads touch one logit.
#include "core/cuda/cuda_check.h"
#include "backend/cuda/penalty_kernels.h"
#include "sampling/sampling_math.h"

namespace fg::cuda {

namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) apply_penalties_kernel(PenaltyKernelArgs a) {
  const int64_t row = blockIdx.x;
  const int64_t first = a.offsets[row], last = a.offsets[row + 1];
  const int64_t begin = first < 0 ? 0 : first, end = last > a.capacity ? a.capacity : last;
  if (begin >= end) return;
  const float repetition = a.repetition_penalty[row];
  const float presence = a.presence_penalty[row];
  const float frequency = a.frequency_penalty[row];
  float* logits = a.logits + row * a.vocab;
  const int2* entries = reinterpret_cast<const int2*>(a.entries);
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
