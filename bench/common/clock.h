// bench/common/clock.h — the benchmarks' one host clock: monotonic seconds as a double, so that
// `bench serve`'s send times, chunk arrivals and duration and `bench latency`'s step times are all
// differences on the same clock.
#pragma once

#include <chrono>

namespace fg::bench {

inline double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace fg::bench
