// server/metrics.cpp — see metrics.h.
#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace fg::server {

Histogram::Histogram(std::vector<double> bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    FG_CHECK(std::isfinite(bounds[i]), "histogram bound {} is not finite", i);
    FG_CHECK(i == 0 || bounds[i] > bounds[i - 1], "histogram bounds must increase (bound {})", i);
  }
  data_.counts.assign(bounds.size() + 1, 0);
  data_.bounds = std::move(bounds);
}

void Histogram::observe(double value) {
  if (std::isnan(value)) return;
  // Prometheus buckets are "less than or equal": a value on a bound belongs to that bucket.
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(data_.bounds.begin(), data_.bounds.end(), value) - data_.bounds.begin());
  std::lock_guard lock(mutex_);
  ++data_.counts[bucket];
  data_.sum += value;
  ++data_.count;
}

HistogramSnapshot Histogram::snapshot() const {
  std::lock_guard lock(mutex_);
  return data_;
}

std::string prometheus_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::string prometheus_escape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

PrometheusText::PrometheusText(Labels common) : common_(std::move(common)) {}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  // HELP text escapes only backslash and newline.
  std::string h;
  for (char c : help) {
    if (c == '\\')
      h += "\\\\";
    else if (c == '\n')
      h += "\\n";
    else
      h += c;
  }
  fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, h, name, type);
}

void PrometheusText::sample(std::string_view name, double value, const Labels& labels) {
  out_ += name;
  if (!common_.empty() || !labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const Labels* set : {static_cast<const Labels*>(&common_), &labels}) {
      for (const auto& [key, v] : *set) {
        if (!first) out_ += ',';
        first = false;
        fmt::format_to(std::back_inserter(out_), "{}=\"{}\"", key, prometheus_escape(v));
      }
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += prometheus_number(value);
  out_ += '\n';
}

void PrometheusText::counter(std::string_view name, std::string_view help, double value, const Labels& labels) {
  family(name, "counter", help);
  sample(name, value, labels);
}

void PrometheusText::gauge(std::string_view name, std::string_view help, double value, const Labels& labels) {
  family(name, "gauge", help);
  sample(name, value, labels);
}

void PrometheusText::histogram(std::string_view name, std::string_view help, const HistogramSnapshot& h,
                               const Labels& labels) {
  family(name, "histogram", help);
  const std::string bucket = fmt::format("{}_bucket", name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    Labels with_le = labels;
    with_le.emplace_back("le", i < h.bounds.size() ? prometheus_number(h.bounds[i]) : "+Inf");
    sample(bucket, static_cast<double>(cumulative), with_le);
  }
  sample(fmt::format("{}_sum", name), h.sum, labels);
  sample(fmt::format("{}_count", name), static_cast<double>(h.count), labels);
}

}  // namespace fg::server
