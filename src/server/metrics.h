// server/metrics.h — Prometheus building blocks: a thread-safe histogram and a writer of the text
// exposition format (version 0.0.4, what Prometheus and vLLM's /metrics speak). The metric set
// itself — names, buckets, where each value comes from — is server_metrics.h's business.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fg::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct HistogramSnapshot {
  std::vector<double> bounds;    // [buckets] upper bounds, increasing (the +Inf bucket is implied)
  std::vector<uint64_t> counts;  // [buckets + 1] observations per bucket, NOT cumulative; last = above all bounds
  double sum = 0.0;
  uint64_t count = 0;
};

class Histogram {
 public:
  // `bounds` must be finite and strictly increasing (fg::Error otherwise).
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);  // NaN is ignored: it would poison the sum forever
  HistogramSnapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  HistogramSnapshot data_;
};

// Accumulates one exposition. Each family is announced once (HELP, TYPE), then its samples.
class PrometheusText {
 public:
  // `common` labels (e.g. model_name) go on every sample, before the sample's own.
  explicit PrometheusText(Labels common = {});

  void counter(std::string_view name, std::string_view help, double value, const Labels& labels = {});
  void gauge(std::string_view name, std::string_view help, double value, const Labels& labels = {});
  void histogram(std::string_view name, std::string_view help, const HistogramSnapshot& h, const Labels& labels = {});
  // A family with several labelled samples: announce it, then add samples.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, double value, const Labels& labels = {});

  const std::string& text() const { return out_; }

 private:
  Labels common_;
  std::string out_;
};

// Prometheus' spelling of a sample value: shortest round-trip decimal, +Inf, -Inf, NaN.
std::string prometheus_number(double value);
// A label value with \, " and newline escaped.
std::string prometheus_escape(std::string_view value);

}  // namespace fg::server
