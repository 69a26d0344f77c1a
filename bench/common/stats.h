// bench/common/stats.h — the benchmarks' one set of summary statistics: mean, std, median and
// percentiles, computed the way vLLM's benchmark_serving.py computes them with numpy, so that the
// numbers of `bench serve` and vLLM's compare. Every benchmark's median is this one.
//
// vLLM reports np.mean, np.std (population, ddof=0), np.median and np.percentile (the default
// "linear" method) of each latency list, and 0 for an empty list (`np.mean(ttfts or 0)`).
#pragma once

#include <span>
#include <utility>
#include <vector>

namespace fg::bench {

// np.percentile(values, p) with the linear method; p in [0, 100]. 0 for no values.
double percentile(std::span<const double> values, double p);

// np.median(values): the middle value, or the mean of the two middle values. 0 for no values.
double median(std::span<const double> values);

// np.mean and np.std (ddof=0). 0 for no values.
double mean(std::span<const double> values);
double stddev(std::span<const double> values);

// One latency metric summarised: mean, std, median and the requested percentiles.
struct Distribution {
  double mean = 0.0, std = 0.0, median = 0.0;
  std::vector<std::pair<double, double>> percentiles;  // (p, value), in the order asked
};

// Summarises `values` and multiplies every statistic by `scale` afterwards (vLLM computes on
// seconds and reports milliseconds, so scaling last keeps the numbers identical to its own).
Distribution summarize(std::span<const double> values, std::span<const double> percentiles, double scale = 1.0);

}  // namespace fg::bench
