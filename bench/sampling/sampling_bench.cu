// bench/sampling/sampling_bench.cu — the sampler benchmark: fills model-like logits on the device,
// launches the sampling kernel for each (rows, configuration) and reports the median of per-launch
// CUDA-event timings, with the logits read rate it implies.
//
// Logits are approximately normal with a few strong tokens, so that top-p keeps a realistic
// handful-to-hundreds of tokens and min-p / top-k thresholds fall inside the bulk.
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "backend/cuda/sampling.h"
#include "bench/common/cuda_timing.h"
#include "bench/common/device_buffer.h"
#include "bench/sampling/sampling_bench.h"
#include "core/cuda/cuda_check.h"
#include "sampling/philox.h"

namespace fg::bench {

namespace {

// logits[r][i] ~ 2.5 * (sum of four uniforms - 2) * sqrt(3), plus +12 on every 4099th token.
__global__ void fill_logits_kernel(float* logits, int64_t n, int64_t vocab, uint64_t seed) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const sampling::Philox4x32 r =
      sampling::philox4x32_10(sampling::Philox4x32{{static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 7u, 0u}},
                              static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  float sum = 0.0f;
  for (int k = 0; k < 4; ++k) sum += static_cast<float>(r.v[k] >> 8) * (1.0f / 16777216.0f);
  float v = 2.5f * 1.7320508f * (sum - 2.0f);
  if ((i % vocab) % 4099 == 17) v += 12.0f;
  logits[i] = v;
}

struct Config {
  const char* name;
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};

int run() {
  constexpr int64_t kVocab = 128256, kMaxRows = 256;
  constexpr int kWarmup = 3, kReps = 25;
  const int64_t rows_list[] = {1, 8, 64, 256};
  const Config configs[] = {
      {"greedy", 0.0f, 0, 1.0f, 0.0f},
      {"T=0.8 top_k=50 top_p=0.9", 0.8f, 50, 0.9f, 0.0f},
      {"T=0.6 top_p=0.9", 0.6f, 0, 0.9f, 0.0f},
      {"T=1.0", 1.0f, 0, 1.0f, 0.0f},
      {"T=1.0 min_p=0.05", 1.0f, 0, 1.0f, 0.05f},
  };

  DeviceArray<float> logits(kMaxRows * kVocab), temperature(kMaxRows), top_p(kMaxRows), min_p(kMaxRows),
      logprobs(kMaxRows);
  DeviceArray<int32_t> top_k(kMaxRows), ids(kMaxRows);
  std::vector<int64_t> seeds(kMaxRows), steps(kMaxRows);
  for (int64_t r = 0; r < kMaxRows; ++r) {
    seeds[r] = 1000 + r;
    steps[r] = 37 * r;
  }
  const DeviceArray<int64_t> seed = device_copy(seeds), step = device_copy(steps);
  cudaStream_t stream;
  FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    const int64_t n = kMaxRows * kVocab;
    fill_logits_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(logits.get(), n, kVocab, 2024);
    FG_CUDA_CHECK(cudaGetLastError());
  }

  std::printf("sampling benchmark, vocab %lld, median of %d launches (CUDA events)\n", static_cast<long long>(kVocab),
              kReps);
  std::printf("%-28s %6s %12s %14s %12s %12s\n", "configuration", "rows", "median us", "us per row", "logits GB/s",
              "+logprobs us");
  for (const Config& c : configs) {
    temperature.fill(c.temperature);
    top_k.fill(c.top_k);
    top_p.fill(c.top_p);
    min_p.fill(c.min_p);
    for (int64_t rows : rows_list) {
      double medians[2];
      for (int with_logprobs = 0; with_logprobs < 2; ++with_logprobs) {
        cuda::SamplingKernelArgs args;
        args.logits = logits.get();
        args.rows = rows;
        args.vocab = kVocab;
        args.temperature = temperature.get();
        args.top_k = top_k.get();
        args.top_p = top_p.get();
        args.min_p = min_p.get();
        args.seed = seed.get();
        args.step = step.get();
        args.out_ids = ids.get();
        args.out_logprobs = with_logprobs ? logprobs.get() : nullptr;
        medians[with_logprobs] = median_us(stream, kReps, kWarmup, [&] { cuda::launch_sampling_kernel(args, stream); });
      }
      const double gbps = static_cast<double>(rows) * kVocab * sizeof(float) / (medians[0] * 1e-6) / 1e9;
      std::printf("%-28s %6lld %12.2f %14.3f %12.1f %12.2f\n", c.name, static_cast<long long>(rows), medians[0],
                  medians[0] / static_cast<double>(rows), gbps, medians[1]);
    }
  }
  FG_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace

int run_sampling_benchmark() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sampling benchmark failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace fg::bench
