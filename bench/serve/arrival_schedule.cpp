// bench/serve/arrival_schedule.cpp — gamma-distributed inter-arrival gaps.
#include "bench/serve/arrival_schedule.h"

#include <cmath>
#include <random>

#include "core/error.h"

namespace fg::bench {

std::vector<double> arrival_schedule(int64_t count, double request_rate, double burstiness, uint64_t seed) {
  FG_CHECK(count >= 0, "--num-prompts must not be negative");
  FG_CHECK(request_rate > 0.0, "--request-rate must be positive (or inf), got {}", request_rate);
  FG_CHECK(burstiness > 0.0 && std::isfinite(burstiness), "--burstiness must be a positive number, got {}", burstiness);
  std::vector<double> at(static_cast<size_t>(count), 0.0);
  if (std::isinf(request_rate)) return at;
  // The seed is offset so that the schedule does not replay the dataset generator's stream.
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (request_rate * burstiness));
  for (size_t i = 1; i < at.size(); ++i) at[i] = at[i - 1] + gap(rng);
  return at;
}

}  // namespace fg::bench
