// bench/sampling/sampling_bench.h — `fullgraph bench sampling`: the time of the GPU sampler
// (backend/cuda/sampling.h) at the Llama-3 vocabulary (128256 tokens): rows 1, 8, 64 and 256, for
// greedy rows and for sampled rows (temperature with top-k + top-p, top-p alone, temperature
// alone, min-p), each launch timed with CUDA events, the median per configuration printed.
#pragma once

namespace fg::bench {

// Prints a table to stdout; returns 0 on success, non-zero when a CUDA call failed (the error is
// printed). Needs a GPU with ~1 GiB free.
int run_sampling_benchmark();

}  // namespace fg::bench
