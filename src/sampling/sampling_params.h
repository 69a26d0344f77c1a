// sampling/sampling_params.h — per-request sampling parameters as they live in the persistent step
// buffers (one tensor per field, [rows]), their validation, and THE definition of token sampling
// that the CPU reference (sampling/cpu_sampler.h, cpu_penalties.h, cpu_logprobs.h) and the CUDA
// kernels (backend/cuda/sampling.h, penalty_kernels.h, logprob_kernels.h) all implement, bit for bit.
//
// Semantics, for row r with RAW logits L[0..V) (F32, the model's) and the parameters of row r. Every
// float operation is the one of sampling/sampling_math.h, so each value below is defined to the bit:
//
//  0. Token mask, then logit bias, then penalties.
//     The token mask comes first of all (a structured-output request's grammar bitmask; W =
//     ceil(V / 32) words, token t allowed when bit t % 32 of word t / 32 is set): every t it does
//     not allow gets L_t = -inf, as vLLM applies the grammar bitmask to the logits before its
//     sampler. Every later step reads the masked values as the RAW logits L, item 4 included: a
//     masked token's logprob is -inf, and the others' are renormalised over the allowed tokens. An
//     all-ones mask (unconstrained requests, padded rows) changes nothing. A mask that allows no
//     token of [0, V) is a bug of whoever made it (a grammar always allows at least its end token);
//     such a row is left unmasked, so that the step still gives a token of the vocabulary (which the
//     grammar then rejects) rather than one of a row of -inf; checked mode refuses such a mask.
//     Then, for each (t, b) of the request's logit_bias (OpenAI's; distinct
//     tokens, finite b in [-100, 100]): L_t becomes L_t + b (one fp32 rounding), as vLLM applies its
//     logit-bias processor before the penalties; the rest of item 0 and items 1-3 read these biased
//     values as L. Item 4 does not: logprobs stay those of the (masked) raw logits.
//     Penalties (vLLM v1's apply_penalties; all three off by default). With rp = repetition_penalty,
//     pp = presence_penalty, fp = frequency_penalty, P = the set of tokens of the request's prompt,
//     c_t = the number of occurrences of token t in the request's output (every token it generated
//     so far, as a float; exact below 2^24), the logits l that items 1-3 read are:
//       l_t = L_t                                     for t not in P and c_t == 0 (untouched);
//       m_t = L_t > 0 ? L_t / rp : L_t * rp           for t in P or c_t > 0 (vLLM's
//             apply_repetition_penalties; exact identity when rp == 1);
//       l_t = m_t                                     when c_t == 0;
//       l_t = (m_t - fp * c_t) - pp                   when c_t > 0: two roundings, in vLLM's order
//             (`logits -= frequency * counts`, then `logits -= presence * mask`; where c_t == 0 vLLM
//             subtracts zeros, which at most turns a -0 into +0, a value no decision tells apart).
//     -inf stays -inf. A request "has penalties" when rp != 1, pp != 0 or fp != 0; the others never
//     read P or c at all. Greedy sampling with penalties is therefore the argmax of penalized logits.
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
//  4. Logprobs (when num_logprobs >= 0): the log-softmax of the RAW logits L (vLLM's default
//     raw_logprobs: before penalties, temperature and filters; after the token mask). With L_max = the value of item 1
//     computed over L (the lowest-id maximum; -inf when there is none) and
//     Z = sum_i floor(exp_det(L_i - L_max) * 2^40) (an exact integer),
//       logprob(t) = (L_t - L_max) - log_det(Z * 2^-40)          (token_logprob).
//     Reported: logprob(token) of the sampled token, and, for n = num_logprobs >= 1, the n most
//     likely tokens: the first min(n, V) tokens in the order (L_t descending, then id ascending),
//     where -0 and +0 tie and NaN sorts below -inf (logprob_rank), each with logprob(t). Since Z is
//     an integer sum and every other step one rounding, the values do not depend on any reduction
//     order: CPU and GPU agree bit for bit, as for the token.
//
// Filter order: that of vLLM v1 (vllm/v1/sample/sampler.py, and vllm/v1/worker/gpu/sample/
// sampler.py): the token mask, logit bias, penalties, temperature, then min-p (an argmax-invariant logits processor), then
// top-k, then top-p, then the draw. (vLLM v0 applied top-k, top-p and then min-p.) min-p and top-k
// commute, both keeping a top set with the same p_max, so the order matters only in that top-p is
// taken over the distribution renormalised over the min-p and top-k survivors.
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
// How a step computes all this inside one graph (runner/model_runner.cpp, Backend in backend.h):
// apply_token_mask writes -inf over the masked tokens in place (the logits it leaves are the raw
// logits L of everything after it), then
// raw_logprobs reads the raw logits (L_max, Z and the top n of rows that want logprobs), then
// apply_penalties rewrites the listed logits in place, saving each one's raw value, then sample
// draws from the penalized logits, then sampled_logprobs takes the sampled token's raw logit from
// the saved values when the token was penalized, from the (untouched) logits otherwise. No copy of
// a [rows, V] logits block is needed, and rows without logprobs or penalties cost one read of a
// parameter each (no pass over V); a row without a mask costs one read of its W all-ones words.
// The price: after a step, the logits buffer holds the masked, penalized logits.
//
// Preconditions: logits are finite or -inf (masked tokens); NaN and +inf give a valid but
// unspecified id. V < 2^23 (integer masses stay below 2^63).
#pragma once

#include <array>
#include <cstdint>
#include <variant>
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
  float repetition_penalty = 1.0f;  // finite, > 0; 1 = off (item 0)
  float presence_penalty = 0.0f;    // finite, in [-2, 2]; 0 = off
  float frequency_penalty = 0.0f;   // finite, in [-2, 2]; 0 = off
  int32_t num_logprobs = -1;        // -1 = none; 0 = the sampled token's; n <= kMaxLogprobs = also the top n

  bool has_penalties() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

// The most top logprobs a request may ask for (OpenAI's top_logprobs limit, vLLM's default).
inline constexpr int32_t kMaxLogprobs = 20;

// The bounds of presence_penalty and frequency_penalty (OpenAI's and vLLM's).
inline constexpr float kMaxAbsPenalty = 2.0f;

// The bound of a logit bias (OpenAI's).
inline constexpr float kMaxAbsLogitBias = 100.0f;

// Below this a temperature is refused rather than silently treated as greedy (vLLM's sampler
// switches to greedy under 1e-5); callers that want greedy say 0.
inline constexpr float kMinSamplingTemperature = 1e-5f;

// The largest vocabulary the fixed-point masses allow.
inline constexpr int64_t kMaxSamplingVocab = (int64_t{1} << 23) - 1;

// Struct of arrays, one element per row. In the persistent step buffers these are sized for the
// largest batch: a sampler reads the first m rows, m = the number of logits rows. Padded rows must
// be neutral (temperature 0, no penalties, num_logprobs -1), which makes them cost one argmax.
// The last four fields are read by the penalty and logprob ops only; sample() ignores them, and
// host helpers treat them as neutral when they are left undefined.
struct SamplingTensors {
  Tensor temperature;         // F32 [rows]
  Tensor top_k;               // I32 [rows]
  Tensor top_p;               // F32 [rows]
  Tensor min_p;               // F32 [rows]
  Tensor seed;                // I64 [rows]
  Tensor step;                // I64 [rows]
  Tensor repetition_penalty;  // F32 [rows]
  Tensor presence_penalty;    // F32 [rows]
  Tensor frequency_penalty;   // F32 [rows]
  Tensor num_logprobs;        // I32 [rows]
};

// A step's penalty lists, CSR over rows: row r's entries are [offsets[r], offsets[r + 1]), each a
// DISTINCT token of P u {t : c_t > 0} with its output count c_t (item 0); the runner leaves P out
// when repetition_penalty == 1, where prompt-only tokens keep their value. Interleaving (token, count)
// keeps the used part of the list one contiguous prefix, so the runner copies only what a step uses.
// A row whose request has no penalties has an empty list (the ops never read its parameters).
//
// The logit-bias lists (item 0) share the entries: row r's are entries [bias_offsets[r],
// bias_offsets[r + 1]), each (token, bias as the bits of an F32), all of them after every penalty
// entry, so that a step still copies one used prefix of the entries. apply_penalties adds a row's
// biases before it penalizes, saving each biased token's raw logit in `original` too;
// sampled_logprobs then takes a token's raw logit from its bias entry first (its penalty entry, if
// any, saved the biased value). bias_offsets undefined: no row has a bias.
struct PenaltyTensors {
  Tensor offsets;       // I32 [rows + 1]: offsets[0] = 0, non-decreasing, offsets[rows] <= capacity
  Tensor entries;       // I32 [capacity, 2]: (token id in [0, V), output count >= 0), then the biases
  Tensor original;      // F32 [capacity]: written by apply_penalties: the raw logit of each entry
  Tensor bias_offsets;  // I32 [rows + 1]: non-decreasing, from offsets[rows] to at most capacity
};

// Logprob outputs of rows with num_logprobs >= 0 (other rows are neither read nor written).
struct LogprobTensors {
  Tensor logit_max;     // F32 [rows]: L_max of item 4 (written by raw_logprobs)
  Tensor mass;          // I64 [rows]: Z of item 4 (written by raw_logprobs)
  Tensor top_ids;       // I32 [rows, kMaxLogprobs]: the first min(n, V) written, most likely first
  Tensor top_logprobs;  // F32 [rows, kMaxLogprobs]
  Tensor sampled;       // F32 [rows]: logprob of the sampled token (written by sampled_logprobs)
};

// Every per-request sampling field, once: its name, the SamplingParams member that holds a request's
// value (whose C++ type is the field's element type; SamplingParams{} holds the neutral value of
// padded rows), and the SamplingTensors member that holds the rows. The host helpers below, the
// runner's step table (runner/step_fields.h) and checked mode all iterate this list, so a new
// sampling parameter is a member in both structs and one line here.
struct SamplingField {
  const char* name;
  std::variant<float SamplingParams::*, int32_t SamplingParams::*, int64_t SamplingParams::*> param;
  Tensor SamplingTensors::*tensor;
  bool read_by_sample;  // sample() reads it; the others (penalty and logprob ops) may be left undefined
};

inline constexpr std::array kSamplingFields = {
    SamplingField{"temperature", &SamplingParams::temperature, &SamplingTensors::temperature, true},
    SamplingField{"top_k", &SamplingParams::top_k, &SamplingTensors::top_k, true},
    SamplingField{"top_p", &SamplingParams::top_p, &SamplingTensors::top_p, true},
    SamplingField{"min_p", &SamplingParams::min_p, &SamplingTensors::min_p, true},
    SamplingField{"seed", &SamplingParams::seed, &SamplingTensors::seed, true},
    SamplingField{"step", &SamplingParams::step, &SamplingTensors::step, true},
    SamplingField{"repetition_penalty", &SamplingParams::repetition_penalty, &SamplingTensors::repetition_penalty,
                  false},
    SamplingField{"presence_penalty", &SamplingParams::presence_penalty, &SamplingTensors::presence_penalty, false},
    SamplingField{"frequency_penalty", &SamplingParams::frequency_penalty, &SamplingTensors::frequency_penalty,
                  false},
    SamplingField{"num_logprobs", &SamplingParams::num_logprobs, &SamplingTensors::num_logprobs, false},
};

// The element type T of a SamplingField::param alternative `T SamplingParams::*`.
template <typename Member>
struct member_type;
template <typename T, typename Class>
struct member_type<T Class::*> {
  using type = T;
};
template <typename Member>
using member_type_t = typename member_type<Member>::type;

// The element type of a sampling field.
DType sampling_field_dtype(const SamplingField& field);

// Host storage for SamplingTensors (tests, the CPU path, the runner's pinned staging is similar).
// Rows start neutral.
class HostSamplingBuffers {
 public:
  explicit HostSamplingBuffers(int64_t rows);
  HostSamplingBuffers(const HostSamplingBuffers&) = delete;
  HostSamplingBuffers& operator=(const HostSamplingBuffers&) = delete;

  int64_t rows() const { return rows_; }
  const SamplingTensors& tensors() const { return tensors_; }
  void set(int64_t row, const SamplingParams& params);
  SamplingParams get(int64_t row) const;

 private:
  int64_t rows_ = 0;
  std::vector<int64_t> storage_;  // [kSamplingFields.size(), rows]: 8 bytes a row holds every field's type
  SamplingTensors tensors_;
};

// Row `row` of host tensors. The last four fields may be undefined: get reads them as neutral, set
// refuses a non-neutral value for them.
void set_sampling_row(const SamplingTensors& host, int64_t row, const SamplingParams& params);
SamplingParams get_sampling_row(const SamplingTensors& host, int64_t row);
// Rows [begin, end) become neutral: greedy, no filters, seed and step 0, no penalties, no logprobs.
void set_neutral_sampling_rows(const SamplingTensors& host, int64_t begin, int64_t end);

// Throws fg::Error naming the field and the row when a value is out of range:
// temperature finite and 0 or >= kMinSamplingTemperature; top_k >= 0; top_p in (0, 1];
// min_p in [0, 1]; step >= 0; repetition_penalty finite and > 0; presence_penalty and
// frequency_penalty finite and in [-2, 2]; num_logprobs in [-1, kMaxLogprobs].
void validate_sampling_params(const SamplingParams& params, int64_t row);
// Rows [0, rows) of host tensors (shapes checked too).
void validate_sampling_params(const SamplingTensors& host, int64_t rows);

// Shapes, dtypes and devices of a sampler call, with messages naming the tensor: logits F32
// [m, V] with 0 < V <= max_vocab; every parameter tensor 1-D with at least m rows and its dtype;
// out_ids I32 [m]; out_logprobs undefined (not wanted) or F32 [m]; all on `device`.
void check_sampling_args(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids,
                         const Tensor& out_logprobs, Device device, int64_t max_vocab);

// The same for the penalty and logprob ops (backend.h), with messages naming the op and tensor:
// logits F32 [m, V]; the parameter tensors they read 1-D with >= m rows; offsets I32 [>= m + 1];
// entries I32 [capacity, 2]; original F32 [capacity]; logprob outputs [>= m] (top_* [>= m,
// kMaxLogprobs]); ids I32 [>= m]; all on `device`.
void check_penalty_args(const Tensor& logits, const SamplingTensors& params, const PenaltyTensors& penalties,
                        Device device);
void check_raw_logprob_args(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out,
                            Device device);
void check_sampled_logprob_args(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                                const PenaltyTensors& penalties, const LogprobTensors& out, Device device);
// And for apply_token_mask: logits F32 [m, V]; mask I32 [>= m, token_mask_words(V)]; both on `device`.
void check_token_mask_args(const Tensor& logits, const Tensor& mask, Device device);

// Where a step's token-mask rows come from (runner/token_mask.h): host memory the device can read
// (pinned on GPUs). The host publishes a step's rows after it launched the step, while the forward
// runs, and the step waits for them just before it applies the mask.
struct TokenMaskUpload {
  const int32_t* mirror = nullptr;      // [rows, words]: the rows as the device buffer must hold them
  const int32_t* changed = nullptr;     // [rows]: nonzero where the device row must be rewritten
  const uint32_t* published = nullptr;  // publications so far; the host writes it last (release)
  // I32 [1 + rows] of the backend: word 0 the publications steps waited for (a u32 count), the
  // rest the backend's (a GPU keeps the step's flags there, read once from the host).
  Tensor waited;
};

// And for upload_token_mask: mask I32 [rows, words] on `device`; mirror, changed and published
// set; waited I32 [1 + rows] on `device`.
void check_token_mask_upload_args(const Tensor& mask, const TokenMaskUpload& upload, Device device);

// The words of a token mask over a vocabulary of `vocab` tokens: ceil(vocab / 32).
constexpr int64_t token_mask_words(int64_t vocab) { return (vocab + 31) / 32; }

}  // namespace fg
