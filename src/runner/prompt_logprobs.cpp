// runner/prompt_logprobs.cpp — ModelRunner::prompt_logprobs: the logprobs of a prompt's own tokens
// (vLLM's prompt_logprobs). An eager pass outside the step graphs, over the request's own KV blocks,
// in pieces of at most max_num_seqs tokens so that every position's logits fit the model's logits
// rows; the same raw-logprob ops as a step's (sampling_params.h, item 4) with the next prompt token
// in the place of the sampled one, so a prompt token's logprob is computed as a generated one's is.
// Each token's rank comes from the logits themselves, read back to the host (this path is eager and
// rare; a device count would be one more op in every backend for one field).
#include <algorithm>
#include <cstring>
#include <memory>

#include "runner/model_runner.h"

namespace fg {

namespace {

// Device tensors for the ops of one pass: n rows of sampling parameters asking for k logprobs, the
// next tokens as the "sampled" ids, and empty penalty lists. Owns their memory.
struct PassInputs {
  SamplingTensors params;
  Tensor ids;
  PenaltyTensors no_penalties;
  std::vector<std::shared_ptr<void>> memory;

  PassInputs(Backend& backend, std::span<const int32_t> next_tokens, int32_t k) {
    const int64_t n = static_cast<int64_t>(next_tokens.size());
    HostSamplingBuffers host(n);
    SamplingParams p;
    p.num_logprobs = k;
    for (int64_t r = 0; r < n; ++r) host.set(r, p);
    for (const SamplingField& f : kSamplingFields)
      params.*f.tensor = upload(backend, host.tensors().*f.tensor);
    ids = upload(backend, Tensor(const_cast<int32_t*>(next_tokens.data()), DType::kI32, {n}));
    const std::vector<int32_t> zeros(static_cast<size_t>(n + 2), 0);
    no_penalties.offsets = upload(backend, Tensor(const_cast<int32_t*>(zeros.data()), DType::kI32, {n + 1}));
    no_penalties.entries = upload(backend, Tensor(const_cast<int32_t*>(zeros.data()), DType::kI32, {2})).view({1, 2});
    Allocation original = backend.allocate(DType::kF32, {1});
    memory.push_back(original.memory);
    no_penalties.original = original.tensor;
  }

  Tensor upload(Backend& backend, const Tensor& host) {
    Allocation a = backend.allocate(host.dtype, {host.numel()});
    backend.copy_from_host(a.tensor, host.data);
    memory.push_back(a.memory);
    return a.tensor;
  }
};

// 1 + how many entries of each logits row are above that row's next token's: vLLM's rank.
std::vector<int64_t> token_ranks(Backend& backend, const Tensor& logits, std::span<const int32_t> next_tokens) {
  const int64_t n = logits.shape[0], vocab = logits.shape[1];
  std::vector<uint8_t> bytes(logits.nbytes());
  backend.copy_to_host(bytes.data(), logits);
  std::vector<float> row(static_cast<size_t>(vocab));
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* src = bytes.data() + static_cast<size_t>(r * vocab) * dtype_size(logits.dtype);
    for (int64_t v = 0; v < vocab; ++v) {
      switch (logits.dtype) {
        case DType::kF32: std::memcpy(&row[v], src + 4 * v, 4); break;
        case DType::kBF16: { uint16_t b; std::memcpy(&b, src + 2 * v, 2); row[v] = bf16_to_float(b); break; }
        case DType::kF16: { uint16_t b; std::memcpy(&b, src + 2 * v, 2); row[v] = f16_to_float(b); break; }
        default: FG_CHECK(false, "prompt logprobs: logits of dtype {} have no rank", dtype_name(logits.dtype));
      }
    }
    const float own = row[static_cast<size_t>(next_tokens[r])];
    ranks.push_back(1 + std::count_if(row.begin(), row.end(), [own](float x) { return x > own; }));
  }
  return ranks;
}

}  // namespace

std::vector<TokenLogprobs> ModelRunner::prompt_logprobs(std::span<const int32_t> tokens, int64_t first, int64_t last,
                                                        std::span<const int32_t> block_ids, int32_t k) {
  FG_CHECK(first >= 0 && first <= last && last < static_cast<int64_t>(tokens.size()),
           "prompt logprobs: positions [{}, {}) of {} tokens leave no next token to score", first, last,
           tokens.size());
  FG_CHECK(k >= 0 && k <= kMaxLogprobs, "prompt logprobs: {} top logprobs asked, at most {}", k, kMaxLogprobs);
  std::vector<TokenLogprobs> result;
  const int64_t pass = std::min(options_.max_num_seqs, model_.max_logits());
  for (int64_t start = first; start < last; start += pass) {
    const int64_t n = std::min(pass, last - start);
    ScheduledRequest r;
    r.token_ids = tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(n));
    r.num_computed = start;
    r.block_ids = block_ids;
    r.all_logits = true;
    const DeviceStep step = upload_step(backend_, {r}, kv_.block_size, max_blocks_per_seq_);
    const Tensor logits = model_.forward(step.views.inputs, kv_);  // [n, V]
    const std::span<const int32_t> next = tokens.subspan(static_cast<size_t>(start + 1), static_cast<size_t>(n));
    const PassInputs inputs(backend_, next, k);
    const LogprobTensors out = logprob_outputs(n);
    backend_.raw_logprobs(logits, inputs.params, out);
    backend_.sampled_logprobs(logits, inputs.ids, inputs.params, inputs.no_penalties, out);
    std::vector<TokenLogprobs> rows = logprobs_of(copy_outputs(n), std::vector<int32_t>(n, k));
    const std::vector<int64_t> ranks = token_ranks(backend_, logits.rows(0, n), next);
    for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)].rank = ranks[static_cast<size_t>(i)];
    result.insert(result.end(), rows.begin(), rows.end());
  }
  return result;
}

}  // namespace fg
