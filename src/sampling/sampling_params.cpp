// sampling/sampling_params.cpp — host-side storage, validation and argument checks of sampling
// parameters. Errors name the field (or tensor) and the row, since they reach API users.
#include "sampling/sampling_params.h"

#include <cmath>

#include "core/error.h"

namespace fg {

namespace {

void check_host_row(const SamplingTensors& host, int64_t row) {
  FG_CHECK(host.temperature.device == Device::kHost, "sampling parameters: expected host tensors");
  FG_CHECK(row >= 0 && row < host.temperature.numel(), "sampling parameters: row {} out of range [0, {})", row,
           host.temperature.numel());
}

void check_param(const Tensor& t, const char* name, DType dtype, int64_t rows, Device device) {
  FG_CHECK(t.defined() && t.data != nullptr, "sampling: parameter tensor {} is missing", name);
  FG_CHECK(t.rank == 1, "sampling: parameter tensor {} must be 1-D, got shape {}", name, t.shape_string());
  FG_CHECK(t.dtype == dtype, "sampling: parameter tensor {} must be {}, got {}", name, dtype_name(dtype),
           dtype_name(t.dtype));
  FG_CHECK(t.dim(0) >= rows, "sampling: parameter tensor {} has {} rows, the logits have {}", name, t.dim(0), rows);
  FG_CHECK(t.device == device, "sampling: parameter tensor {} is on the wrong device", name);
}

}  // namespace

HostSamplingBuffers::HostSamplingBuffers(int64_t rows)
    : temperature_(static_cast<size_t>(rows), 0.0f),
      top_k_(static_cast<size_t>(rows), 0),
      top_p_(static_cast<size_t>(rows), 1.0f),
      min_p_(static_cast<size_t>(rows), 0.0f),
      seed_(static_cast<size_t>(rows), 0),
      step_(static_cast<size_t>(rows), 0) {
  tensors_.temperature = Tensor(temperature_.data(), DType::kF32, {rows});
  tensors_.top_k = Tensor(top_k_.data(), DType::kI32, {rows});
  tensors_.top_p = Tensor(top_p_.data(), DType::kF32, {rows});
  tensors_.min_p = Tensor(min_p_.data(), DType::kF32, {rows});
  tensors_.seed = Tensor(seed_.data(), DType::kI64, {rows});
  tensors_.step = Tensor(step_.data(), DType::kI64, {rows});
}

void HostSamplingBuffers::set(int64_t row, const SamplingParams& params) { set_sampling_row(tensors_, row, params); }
SamplingParams HostSamplingBuffers::get(int64_t row) const { return get_sampling_row(tensors_, row); }

void set_sampling_row(const SamplingTensors& host, int64_t row, const SamplingParams& params) {
  check_host_row(host, row);
  host.temperature.as<float>()[row] = params.temperature;
  host.top_k.as<int32_t>()[row] = params.top_k;
  host.top_p.as<float>()[row] = params.top_p;
  host.min_p.as<float>()[row] = params.min_p;
  host.seed.as<int64_t>()[row] = params.seed;
  host.step.as<int64_t>()[row] = params.step;
}

SamplingParams get_sampling_row(const SamplingTensors& host, int64_t row) {
  check_host_row(host, row);
  SamplingParams p;
  p.temperature = host.temperature.as<const float>()[row];
  p.top_k = host.top_k.as<const int32_t>()[row];
  p.top_p = host.top_p.as<const float>()[row];
  p.min_p = host.min_p.as<const float>()[row];
  p.seed = host.seed.as<const int64_t>()[row];
  p.step = host.step.as<const int64_t>()[row];
  return p;
}

void set_neutral_sampling_rows(const SamplingTensors& host, int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) set_sampling_row(host, row, SamplingParams{});
}

void validate_sampling_params(const SamplingParams& p, int64_t row) {
  FG_CHECK(std::isfinite(p.temperature) && (p.temperature == 0.0f || p.temperature >= kMinSamplingTemperature),
           "sampling parameter temperature of row {} is {}; it must be 0 (greedy) or in [{}, inf)", row, p.temperature,
           kMinSamplingTemperature);
  FG_CHECK(p.top_k >= 0, "sampling parameter top_k of row {} is {}; it must be >= 0 (0 = off)", row, p.top_k);
  FG_CHECK(p.top_p > 0.0f && p.top_p <= 1.0f, "sampling parameter top_p of row {} is {}; it must be in (0, 1]", row,
           p.top_p);
  FG_CHECK(p.min_p >= 0.0f && p.min_p <= 1.0f, "sampling parameter min_p of row {} is {}; it must be in [0, 1]", row,
           p.min_p);
  FG_CHECK(p.step >= 0, "sampling parameter step of row {} is {}; it must be >= 0", row, p.step);
}

void validate_sampling_params(const SamplingTensors& host, int64_t rows) {
  check_param(host.temperature, "temperature", DType::kF32, rows, Device::kHost);
  check_param(host.top_k, "top_k", DType::kI32, rows, Device::kHost);
  check_param(host.top_p, "top_p", DType::kF32, rows, Device::kHost);
  check_param(host.min_p, "min_p", DType::kF32, rows, Device::kHost);
  check_param(host.seed, "seed", DType::kI64, rows, Device::kHost);
  check_param(host.step, "step", DType::kI64, rows, Device::kHost);
  for (int64_t row = 0; row < rows; ++row) validate_sampling_params(get_sampling_row(host, row), row);
}

void check_sampling_args(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids,
                         const Tensor& out_logprobs, Device device, int64_t max_vocab) {
  FG_CHECK(logits.rank == 2 && logits.dtype == DType::kF32, "sampling: logits must be F32 [rows, vocab], got {} {}",
           dtype_name(logits.dtype), logits.shape_string());
  FG_CHECK(logits.device == device, "sampling: logits are on the wrong device");
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  FG_CHECK(vocab > 0 && vocab <= max_vocab, "sampling: vocabulary of {} tokens; this sampler handles 1 to {}", vocab,
           max_vocab);
  FG_CHECK(rows == 0 || logits.data != nullptr, "sampling: logits have no data");
  check_param(params.temperature, "temperature", DType::kF32, rows, device);
  check_param(params.top_k, "top_k", DType::kI32, rows, device);
  check_param(params.top_p, "top_p", DType::kF32, rows, device);
  check_param(params.min_p, "min_p", DType::kF32, rows, device);
  check_param(params.seed, "seed", DType::kI64, rows, device);
  check_param(params.step, "step", DType::kI64, rows, device);
  FG_CHECK(out_ids.dtype == DType::kI32 && out_ids.same_shape({rows}), "sampling: out_ids must be I32 [{}], got {} {}",
           rows, dtype_name(out_ids.dtype), out_ids.shape_string());
  FG_CHECK(out_ids.device == device && (rows == 0 || out_ids.data != nullptr),
           "sampling: out_ids is missing or on the wrong device");
  if (out_logprobs.data != nullptr) {
    FG_CHECK(out_logprobs.dtype == DType::kF32 && out_logprobs.same_shape({rows}),
             "sampling: out_logprobs must be F32 [{}], got {} {}", rows, dtype_name(out_logprobs.dtype),
             out_logprobs.shape_string());
    FG_CHECK(out_logprobs.device == device, "sampling: out_logprobs is on the wrong device");
  }
}

}  // namespace fg
