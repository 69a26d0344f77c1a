// bench/serve/arrival_schedule.h — when each benchmark request is sent, relative to the start.
//
// As in vLLM: request i+1 follows request i after a gap drawn from a gamma distribution with
// shape `burstiness` and mean 1/rate; burstiness 1 makes it exponential, i.e. a Poisson process.
// An infinite rate sends everything at time 0. The schedule is drawn up front from its own
// seeded generator, so the same --seed gives the same arrivals whatever the server does.
#pragma once

#include <cstdint>
#include <vector>

namespace fg::bench {

// `count` send offsets in seconds, non-decreasing, the first at 0.
std::vector<double> arrival_schedule(int64_t count, double request_rate, double burstiness, uint64_t seed);

}  // namespace fg::bench
