// runner/prompt_logprobs.cpp — ModelRunner::prompt_logprobs: the logprobs of a prompt's own tokens
// (vLLM's prompt_logprobs). An eager pass outside the step graphs, over the request's own KV blocks,
// in pieces of at most max_num_seqs tokens so that every position's logits fit the model's logits
// rows; the same raw-logprob ops as a step's (sampling_params.h, item 4) with the next prompt token
// in the place of the sampled one, so a prompt token's logprob is computed as a generated one's is.
#include <algorithm>
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
    const PassInputs inputs(backend_, tokens.subspan(static_cast<size_t>(start + 1), static_cast<size_t>(n)), k);
    const LogprobTensors out = logprob_outputs(n);
    backend_.raw_logprobs(logits, inputs.params, out);
    backend_.sampled_logprobs(logits, inputs.ids, inputs.params, inputs.no_penalties, out);
    const std::vector<TokenLogprobs> rows = logprobs_of(copy_outputs(n), std::vector<int32_t>(n, k));
    result.insert(result.end(), rows.begin(), rows.end());
  }
  return result;
}

}  // namespace fg
