// bench/common/cuda_timing.h — the one GPU timer of the benchmarks: CUDA events around each run of
// some work on a stream, and the median (bench/common/stats.h) over the timed runs.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace fg::bench {

// Median time in microseconds of `work` (which enqueues on `stream`; CUDA events around each
// run), over `reps` timed runs after `warmup` untimed ones. Raises fg::Error on a CUDA error.
double median_us(cudaStream_t stream, int reps, int warmup, const std::function<void()>& work);

// Median time in microseconds of one launch of `exec` on `stream`, as median_us.
double median_graph_launch_us(cudaGraphExec_t exec, cudaStream_t stream, int reps, int warmup = 3);

}  // namespace fg::bench
