// sampling/cpu_logprobs.cpp — item 4 of sampling_params.h done directly: L_max from the best-ranked
// token, Z as an integer sum, the top n by a partial sort of logprob_rank, each value through
// token_logprob (sampling_math.h), so that the GPU kernels compute the same bits.
#include "sampling/cpu_logprobs.h"

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "sampling/sampling_math.h"

namespace fg {

namespace {

void for_rows(int64_t rows, ThreadPool* pool, const std::function<void(int64_t, int64_t)>& body) {
  if (pool != nullptr) {
    pool->parallel_for(rows, body);
  } else {
    body(0, rows);
  }
}

int32_t checked_num_logprobs(const SamplingTensors& params, int64_t row) {
  const int32_t n = params.num_logprobs.as<const int32_t>()[row];
  FG_CHECK(n >= -1 && n <= kMaxLogprobs, "sampling parameter num_logprobs of row {} is {}; it must be -1 (none) or in "
           "[0, {}]", row, n, kMaxLogprobs);
  return n;
}

}  // namespace

RawLogprobRow raw_logprobs_row(const float* logits, int64_t vocab, int32_t n) {
  RawLogprobRow out;
  const int64_t keep = std::min<int64_t>(std::max<int32_t>(n, 1), vocab);
  std::vector<uint64_t> ranks(static_cast<size_t>(vocab));  // [vocab]
  for (int64_t i = 0; i < vocab; ++i) ranks[i] = sampling::logprob_rank(logits[i], static_cast<uint32_t>(i));
  std::partial_sort(ranks.begin(), ranks.begin() + keep, ranks.end(), std::greater<uint64_t>());
  out.logit_max = sampling::logprob_max_from_best(logits[sampling::logprob_rank_id(ranks[0])]);
  for (int64_t i = 0; i < vocab; ++i)
    out.mass += sampling::fixed_weight(sampling::exp_det(sampling::fsub(logits[i], out.logit_max)));
  for (int64_t k = 0; k < (n > 0 ? keep : 0); ++k) {
    const int32_t id = sampling::logprob_rank_id(ranks[k]);
    out.top.emplace_back(id, sampling::token_logprob(logits[id], out.logit_max, out.mass));
  }
  return out;
}

void raw_logprobs_cpu(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out,
                      ThreadPool* pool) {
  check_raw_logprob_args(logits, params, out, Device::kHost);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  for_rows(rows, pool, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int32_t n = checked_num_logprobs(params, r);
      if (n < 0) continue;
      const RawLogprobRow row = raw_logprobs_row(logits.as<const float>() + r * vocab, vocab, n);
      out.logit_max.as<float>()[r] = row.logit_max;
      out.mass.as<int64_t>()[r] = static_cast<int64_t>(row.mass);
      for (size_t k = 0; k < row.top.size(); ++k) {
        out.top_ids.as<int32_t>()[r * kMaxLogprobs + static_cast<int64_t>(k)] = row.top[k].first;
        out.top_logprobs.as<float>()[r * kMaxLogprobs + static_cast<int64_t>(k)] = row.top[k].second;
      }
    }
  });
}

void sampled_logprobs_cpu(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                          const PenaltyTensors& penalties, const LogprobTensors& out, ThreadPool* pool) {
  check_sampled_logprob_args(logits, ids, params, penalties, out, Device::kHost);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1), capacity = penalties.entries.dim(0);
  const int32_t* offsets = penalties.offsets.as<const int32_t>();
  const int32_t* entries = penalties.entries.as<const int32_t>();
  for_rows(rows, pool, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (checked_num_logprobs(params, r) < 0) continue;
      const int32_t token = ids.as<const int32_t>()[r];
      FG_CHECK(token >= 0 && token < vocab, "sampled_logprobs: ids[{}] = {} is outside the vocabulary of {}", r,
               token, vocab);
      FG_CHECK(offsets[r] >= 0 && offsets[r] <= offsets[r + 1] && offsets[r + 1] <= capacity,
               "sampled_logprobs: penalty offsets[{}..{}] = {}..{} are not a range within the capacity {}", r, r + 1,
               offsets[r], offsets[r + 1], capacity);
      // The raw logit: saved by its bias entry, which ran first; else by its penalty entry; else
      // untouched in the logits.
      float raw = logits.as<const float>()[r * vocab + token];
      for (int64_t e = offsets[r]; e < offsets[r + 1]; ++e)
        if (entries[2 * e] == token) raw = penalties.original.as<const float>()[e];
      if (const int32_t* bias = penalties.bias_offsets.as<const int32_t>()) {
        FG_CHECK(bias[r] >= 0 && bias[r] <= bias[r + 1] && bias[r + 1] <= capacity,
                 "sampled_logprobs: logit-bias offsets[{}..{}] = {}..{} are not a range within the capacity {}", r,
                 r + 1, bias[r], bias[r + 1], capacity);
        for (int64_t e = bias[r]; e < bias[r + 1]; ++e)
          if (entries[2 * e] == token) raw = penalties.original.as<const float>()[e];
      }
      out.sampled.as<float>()[r] = sampling::token_logprob(raw, out.logit_max.as<const float>()[r],
                                                           static_cast<uint64_t>(out.mass.as<const int64_t>()[r]));
    }
  });
}

}  // namespace fg
