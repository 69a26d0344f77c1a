// sampling/sampling_params.h — per-request sampling parameters as they live in the persistent step
// buffers (one tensor per field, [rows]), their validation, and THE definition of token sampling
// that the CPU reference (sampling/cpu_sampler.h) and the CUDA kernel (backend/cuda/sampling.h)
// both implement, bit for bit.
//
// Semantics, for row r with logits l[0..V) (F32) and the parameters of row r. Every float operation
// is the one of sampling/sampling_math.h, so each value below is defined to the bit:
//
//  1. l_max = max_i l_i; g = the LOWEST i with l_i == l_max (the greedy id; NaN logits are never
//     the maximum; g = 0 when there is no maximum, e.g. a row of NaN).
//  2. temperature == 0 (greedy; also every padded row): token = g. Nothing else is read.
//  3. temperature T > 0:
//     s_i = l_i / T                       (scaled_logit; -0 becomes +0)
//     s_max = l_max / T                   (== max_i s_i: rounded division is monotone)
//     w_i = exp_det(s_i - s_max)          (p_i / p_max, in [0, 1])
//     q_i = floor(w_i * 2^40)             (fixed_weight: the token's integer mass)
//     min-p:  B = { i : q_i > 0 and w_i >= min_p }  (p_i >= min_p * p_max; a token lighter than
//             2^-40 of the most likely one is never sampled: its probability is below 1e-12).
//     top-k:  if 0 < top_k < |B|: t = the top_k-th largest s_i over B (with multiplicity),
//             A = { i in B : s_i >= t }. TIES AT THE k-TH VALUE ARE ALL KEPT (|A| may exceed k).
//             Otherwise A = B.
//     top-p:  if top_p < 1: W_A = sum_{i in A} q_i, target = clamp(ceil(top_p * W_A), 1, W_A)
//             (top_p_target, in double); sigma = the LARGEST value v among { s_i : i in A } with
//             sum_{i in A, s_i >= v} q_i >= target; K = { i in A : s_i >= sigma }. That is the
//             smallest set of most likely tokens whose mass, renormalised over A, reaches top_p,
//             PLUS EVERY TOKEN TIED (equal s) WITH ITS LEAST LIKELY MEMBER. Otherwise K = A.
//     draw:   W_K = sum_{i in K} q_i; R = 64 bits of Philox4x32-10 with key = seed and counter =
//             (0, 0, step) (sampling_random_bits); u = floor(R * W_K / 2^64); token = the smallest
//             id t in K with sum_{i in K, i <= t} q_i > u. This is inverse-CDF sampling in token-id
//             order: P(token = t) = q_t / W_K to within 2^-64.
//     If B is empty (no finite maximum: all logits -inf or NaN, or one +inf), token = g.
//  4. Logprob (optional output): the log-softmax of the RAW logits (vLLM's default raw_logprobs,
//     before temperature and filters): (l_token - l_max) - log(Z * 2^-40), with
//     Z = sum_i floor(exp_det(l_i - l_max) * 2^40) and log = log_det.
//
// Filter order: that of vLLM v1 (vllm/v1/sample/sampler.py, and vllm/v1/worker/gpu/sample/
// sampler.py): temperature, then min-p (an argmax-invariant logits processor), then top-k, then
// top-p, then the draw. (vLLM v0 applied top-k, top-p and then min-p.) min-p and top-k commute,
// both keeping a top set with the same p_max, so the order matters only in that top-p is taken
// over the distribution renormalised over the min-p and top-k survivors.
//
// Why inverse CDF over integer masses rather than an exponential race (Gumbel-max): it costs one
// exp per token instead of one Philox block and two logs, and once the per-token floats are fixed
// every decision is an exact integer or float comparison. Sums of integers do not depend on the
// order of a reduction, so the token never depends on the thread layout, on the batch size, on the
// row index, or on CPU versus GPU (DESIGN.md rule 7 holds by construction, not by care).
//
// A request's random stream depends only on (seed, step); the engine advances `step` by one per
// generated token, so two requests with the same seed and step draw the same R.
//
// Preconditions: logits are finite or -inf (masked tokens); NaN and +inf give a valid but
// unspecified id. V < 2^23 (integer masses stay below 2^63).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace fg {

// One request's sampling parameters, as the engine holds them.
struct SamplingParams {
  float temperature = 0.0f;  // 0 = greedy
  int32_t top_k = 0;         // 0, or >= vocab, = off
  float top_p = 1.0f;        // in (0, 1]; 1 = off
  float min_p = 0.0f;        // in [0, 1]; 0 = off
  int64_t seed = 0;          // any value; the Philox key (as 64 bits)
  int64_t step = 0;          // >= 0: the request's generation step, the Philox counter
};

// Below this a temperature is refused rather than silently treated as greedy (vLLM's sampler
// switches to greedy under 1e-5); callers that want greedy say 0.
inline constexpr float kMinSamplingTemperature = 1e-5f;

// The largest vocabulary the fixed-point masses allow.
inline constexpr int64_t kMaxSamplingVocab = (int64_t{1} << 23) - 1;

// Struct of arrays, one element per row. In the persistent step buffers these are sized for the
// largest batch: a sampler reads the first m rows, m = the number of logits rows. Padded rows must
// be neutral (temperature 0), which makes them cost one argmax.
struct SamplingTensors {
  Tensor temperature;  // F32 [rows]
  Tensor top_k;        // I32 [rows]
  Tensor top_p;        // F32 [rows]
  Tensor min_p;        // F32 [rows]
  Tensor seed;         // I64 [rows]
  Tensor step;         // I64 [rows]
};

// Host storage for SamplingTensors (tests, the CPU path, the runner's pinned staging is similar).
// Rows start neutral.
class HostSamplingBuffers {
 public:
  explicit HostSamplingBuffers(int64_t rows);
  HostSamplingBuffers(const HostSamplingBuffers&) = delete;
  HostSamplingBuffers& operator=(const HostSamplingBuffers&) = delete;

  int64_t rows() const { return static_cast<int64_t>(temperature_.size()); }
  const SamplingTensors& tensors() const { return tensors_; }
  void set(int64_t row, const SamplingParams& params);
  SamplingParams get(int64_t row) const;

 private:
  std::vector<float> temperature_;  // [rows]
  std::vector<int32_t> top_k_;      // [rows]
  std::vector<float> top_p_;        // [rows]
  std::vector<float> min_p_;        // [rows]
  std::vector<int64_t> seed_;       // [rows]
  std::vector<int64_t> step_;       // [rows]
  SamplingTensors tensors_;
};

// Row `row` of host tensors.
void set_sampling_row(const SamplingTensors& host, int64_t row, const SamplingParams& params);
SamplingParams get_sampling_row(const SamplingTensors& host, int64_t row);
// Rows [begin, end) become neutral: greedy, no filters, seed and step 0.
void set_neutral_sampling_rows(const SamplingTensors& host, int64_t begin, int64_t end);

// Throws fg::Error naming the field and the row when a value is out of range:
// temperature finite and 0 or >= kMinSamplingTemperature; top_k >= 0; top_p in (0, 1];
// min_p in [0, 1]; step >= 0.
void validate_sampling_params(const SamplingParams& params, int64_t row);
// Rows [0, rows) of host tensors (shapes checked too).
void validate_sampling_params(const SamplingTensors& host, int64_t rows);

// Shapes, dtypes and devices of a sampler call, with messages naming the tensor: logits F32
// [m, V] with 0 < V <= max_vocab; every parameter tensor 1-D with at least m rows and its dtype;
// out_ids I32 [m]; out_logprobs undefined (not wanted) or F32 [m]; all on `device`.
void check_sampling_args(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids,
                         const Tensor& out_logprobs, Device device, int64_t max_vocab);

}  // namespace fg
