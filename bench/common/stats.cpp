// bench/common/stats.cpp — numpy-compatible mean, std, median and linear percentiles.
#include "bench/common/stats.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace fg::bench {

namespace {

std::vector<double> sorted_copy(std::span<const double> values) {
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  return v;
}

// numpy's _lerp: interpolating from the nearer end keeps the result exact at t = 0 and t = 1 and
// makes it bit-identical to numpy's, which matters when comparing reports digit by digit.
double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

}  // namespace

double percentile(std::span<const double> values, double p) {
  FG_CHECK(p >= 0.0 && p <= 100.0, "percentile {} is outside [0, 100]", p);
  if (values.empty()) return 0.0;
  const std::vector<double> v = sorted_copy(values);
  const double virtual_index = static_cast<double>(v.size() - 1) * (p / 100.0);
  const double below = std::floor(virtual_index);
  const size_t lo = static_cast<size_t>(below);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return lerp(v[lo], v[hi], virtual_index - below);
}

double median(std::span<const double> values) {
  if (values.empty()) return 0.0;
  const std::vector<double> v = sorted_copy(values);
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2.0;
}

double mean(std::span<const double> values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (double x : values) sum += x;
  return sum / static_cast<double>(values.size());
}

double stddev(std::span<const double> values) {
  if (values.empty()) return 0.0;
  const double m = mean(values);
  double sum = 0.0;
  for (double x : values) sum += (x - m) * (x - m);
  return std::sqrt(sum / static_cast<double>(values.size()));
}

Distribution summarize(std::span<const double> values, std::span<const double> percentiles, double scale) {
  Distribution d;
  d.mean = mean(values) * scale;
  d.std = stddev(values) * scale;
  d.median = median(values) * scale;
  for (double p : percentiles) d.percentiles.emplace_back(p, percentile(values, p) * scale);
  return d;
}

}  // namespace fg::bench
