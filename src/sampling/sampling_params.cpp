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

// The fields sample() does not read may be left undefined in SamplingTensors (neutral).
template <typename T>
void set_optional(const Tensor& t, const char* name, int64_t row, T value, T neutral) {
  if (t.data != nullptr) {
    FG_CHECK(row < t.numel(), "sampling parameters: row {} out of range of {} [0, {})", row, name, t.numel());
    t.as<T>()[row] = value;
    return;
  }
  FG_CHECK(value == neutral, "sampling parameters: row {} sets {} = {}, but these tensors have no {}", row, name,
           value, name);
}

template <typename T>
void get_optional(const Tensor& t, int64_t row, T& value) {
  if (t.data != nullptr) {
    FG_CHECK(row < t.numel(), "sampling parameters: row {} out of range [0, {})", row, t.numel());
    value = t.as<const T>()[row];
  }
}

void check_rows(const Tensor& t, const char* op, const char* name, DType dtype, int64_t rows, Device device) {
  FG_CHECK(t.data != nullptr || rows == 0, "{}: tensor {} is missing", op, name);
  FG_CHECK(t.dtype == dtype, "{}: tensor {} must be {}, got {}", op, name, dtype_name(dtype), dtype_name(t.dtype));
  FG_CHECK(t.rank >= 1 && t.dim(0) >= rows, "{}: tensor {} has shape {}, needs at least {} rows", op, name,
           t.shape_string(), rows);
  FG_CHECK(t.device == device, "{}: tensor {} is on the wrong device", op, name);
}

void check_logits(const Tensor& logits, const char* op, Device device) {
  FG_CHECK(logits.rank == 2 && logits.dtype == DType::kF32, "{}: logits must be F32 [rows, vocab], got {} {}", op,
           dtype_name(logits.dtype), logits.shape_string());
  FG_CHECK(logits.device == device, "{}: logits are on the wrong device", op);
  FG_CHECK(logits.dim(1) > 0 && logits.dim(1) <= kMaxSamplingVocab,
           "{}: vocabulary of {} tokens; the sampling ops handle 1 to {}", op, logits.dim(1), kMaxSamplingVocab);
  FG_CHECK(logits.dim(0) == 0 || logits.data != nullptr, "{}: logits have no data", op);
}

void check_lists(const PenaltyTensors& penalties, const char* op, int64_t rows, Device device) {
  check_rows(penalties.offsets, op, "penalty offsets", DType::kI32, rows + 1, device);
  if (penalties.bias_offsets.data != nullptr)
    check_rows(penalties.bias_offsets, op, "logit-bias offsets", DType::kI32, rows + 1, device);
  FG_CHECK(penalties.entries.rank == 2 && penalties.entries.dim(1) == 2 && penalties.entries.dtype == DType::kI32,
           "{}: penalty entries must be I32 [capacity, 2], got {} {}", op, dtype_name(penalties.entries.dtype),
           penalties.entries.shape_string());
  const int64_t capacity = penalties.entries.dim(0);
  FG_CHECK(penalties.entries.device == device && (capacity == 0 || penalties.entries.data != nullptr),
           "{}: penalty entries are missing or on the wrong device", op);
  FG_CHECK(penalties.original.dtype == DType::kF32 && penalties.original.same_shape({capacity}) &&
               penalties.original.device == device && (capacity == 0 || penalties.original.data != nullptr),
           "{}: penalty originals must be F32 [{}] on the device of the entries, got {} {}", op, capacity,
           dtype_name(penalties.original.dtype), penalties.original.shape_string());
}

}  // namespace

DType sampling_field_dtype(const SamplingField& field) {
  return std::visit([](auto member) { return dtype_of<member_type_t<decltype(member)>>(); }, field.param);
}

HostSamplingBuffers::HostSamplingBuffers(int64_t rows)
    : rows_(rows), storage_(kSamplingFields.size() * static_cast<size_t>(rows)) {
  for (size_t i = 0; i < kSamplingFields.size(); ++i) {
    const SamplingField& f = kSamplingFields[i];
    tensors_.*f.tensor = Tensor(storage_.data() + i * static_cast<size_t>(rows), sampling_field_dtype(f), {rows});
  }
  set_neutral_sampling_rows(tensors_, 0, rows);
}

void HostSamplingBuffers::set(int64_t row, const SamplingParams& params) { set_sampling_row(tensors_, row, params); }
SamplingParams HostSamplingBuffers::get(int64_t row) const { return get_sampling_row(tensors_, row); }

void set_sampling_row(const SamplingTensors& host, int64_t row, const SamplingParams& params) {
  check_host_row(host, row);
  const SamplingParams neutral;
  for (const SamplingField& f : kSamplingFields) {
    std::visit(
        [&](auto member) {
          const Tensor& t = host.*f.tensor;
          if (f.read_by_sample) {
            t.as<member_type_t<decltype(member)>>()[row] = params.*member;
          } else {
            set_optional(t, f.name, row, params.*member, neutral.*member);
          }
        },
        f.param);
  }
}

SamplingParams get_sampling_row(const SamplingTensors& host, int64_t row) {
  check_host_row(host, row);
  SamplingParams p;
  for (const SamplingField& f : kSamplingFields)
    std::visit([&](auto member) { get_optional(host.*f.tensor, row, p.*member); }, f.param);
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
  FG_CHECK(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0.0f,
           "sampling parameter repetition_penalty of row {} is {}; it must be finite and > 0 (1 = off)", row,
           p.repetition_penalty);
  FG_CHECK(std::isfinite(p.presence_penalty) && std::fabs(p.presence_penalty) <= kMaxAbsPenalty,
           "sampling parameter presence_penalty of row {} is {}; it must be in [-{}, {}] (0 = off)", row,
           p.presence_penalty, kMaxAbsPenalty, kMaxAbsPenalty);
  FG_CHECK(std::isfinite(p.frequency_penalty) && std::fabs(p.frequency_penalty) <= kMaxAbsPenalty,
           "sampling parameter frequency_penalty of row {} is {}; it must be in [-{}, {}] (0 = off)", row,
           p.frequency_penalty, kMaxAbsPenalty, kMaxAbsPenalty);
  FG_CHECK(p.num_logprobs >= -1 && p.num_logprobs <= kMaxLogprobs,
           "sampling parameter num_logprobs of row {} is {}; it must be -1 (none) or in [0, {}]", row, p.num_logprobs,
           kMaxLogprobs);
}

void validate_sampling_params(const SamplingTensors& host, int64_t rows) {
  // The fields sample() does not read are optional: undefined means neutral.
  for (const SamplingField& f : kSamplingFields)
    if (f.read_by_sample || (host.*f.tensor).data != nullptr)
      check_param(host.*f.tensor, f.name, sampling_field_dtype(f), rows, Device::kHost);
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
  for (const SamplingField& f : kSamplingFields)
    if (f.read_by_sample) check_param(params.*f.tensor, f.name, sampling_field_dtype(f), rows, device);
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

void check_penalty_args(const Tensor& logits, const SamplingTensors& params, const PenaltyTensors& penalties,
                        Device device) {
  constexpr const char* op = "apply_penalties";
  check_logits(logits, op, device);
  const int64_t rows = logits.dim(0);
  check_rows(params.repetition_penalty, op, "repetition_penalty", DType::kF32, rows, device);
  check_rows(params.presence_penalty, op, "presence_penalty", DType::kF32, rows, device);
  check_rows(params.frequency_penalty, op, "frequency_penalty", DType::kF32, rows, device);
  check_lists(penalties, op, rows, device);
}

namespace {

// What both logprob ops read and write of every row: the logits, num_logprobs, L_max and Z. Returns
// the rows.
int64_t check_logprob_rows(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out,
                           const char* op, Device device) {
  check_logits(logits, op, device);
  const int64_t rows = logits.dim(0);
  check_rows(params.num_logprobs, op, "num_logprobs", DType::kI32, rows, device);
  check_rows(out.logit_max, op, "logit_max", DType::kF32, rows, device);
  check_rows(out.mass, op, "mass", DType::kI64, rows, device);
  return rows;
}

}  // namespace

void check_raw_logprob_args(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out,
                            Device device) {
  constexpr const char* op = "raw_logprobs";
  const int64_t rows = check_logprob_rows(logits, params, out, op, device);
  check_rows(out.top_ids, op, "top_ids", DType::kI32, rows, device);
  check_rows(out.top_logprobs, op, "top_logprobs", DType::kF32, rows, device);
  FG_CHECK(out.top_ids.rank == 2 && out.top_ids.dim(1) == kMaxLogprobs && out.top_logprobs.rank == 2 &&
               out.top_logprobs.dim(1) == kMaxLogprobs,
           "{}: top_ids {} and top_logprobs {} must be [rows, {}]", op, out.top_ids.shape_string(),
           out.top_logprobs.shape_string(), kMaxLogprobs);
}

void check_sampled_logprob_args(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                                const PenaltyTensors& penalties, const LogprobTensors& out, Device device) {
  constexpr const char* op = "sampled_logprobs";
  const int64_t rows = check_logprob_rows(logits, params, out, op, device);
  check_rows(ids, op, "ids", DType::kI32, rows, device);
  check_lists(penalties, op, rows, device);
  check_rows(out.sampled, op, "sampled", DType::kF32, rows, device);
}

void check_token_mask_args(const Tensor& logits, const Tensor& mask, Device device) {
  constexpr const char* op = "apply_token_mask";
  check_logits(logits, op, device);
  const int64_t rows = logits.dim(0), words = token_mask_words(logits.dim(1));
  check_rows(mask, op, "token_mask", DType::kI32, rows, device);
  FG_CHECK(mask.rank == 2 && mask.dim(1) == words,
           "{}: token_mask must be I32 [rows, {}] (ceil({} / 32) words a row), got {}", op, words, logits.dim(1),
           mask.shape_string());
}

void check_token_mask_upload_args(const Tensor& mask, const TokenMaskUpload& upload, Device device) {
  constexpr const char* op = "upload_token_mask";
  FG_CHECK(mask.dtype == DType::kI32 && mask.rank == 2 && mask.device == device,
           "{}: the mask must be I32 [rows, words] on the backend's device, got {} {}", op, dtype_name(mask.dtype),
           mask.shape_string());
  FG_CHECK(upload.mirror && upload.changed && upload.published, "{}: mirror, changed and published must be set", op);
  FG_CHECK(upload.waited.dtype == DType::kI32 && upload.waited.numel() == 1 + mask.dim(0) &&
               upload.waited.device == device,
           "{}: waited must be I32 [1 + {}] on the backend's device, got {} {}", op, mask.dim(0),
           dtype_name(upload.waited.dtype), upload.waited.shape_string());
}

}  // namespace fg
