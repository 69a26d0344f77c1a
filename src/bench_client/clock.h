// bench_client/clock.h — the one clock of `bench serve`: monotonic seconds as a double, so that
// send times, chunk arrivals and the benchmark duration are all differences on the same clock.
#pragma once

#include <chrono>

namespace fg::bench {

inline double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace fg::bench
