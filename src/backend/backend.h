// backend/backend.h — the op set the model's layer loop is written against.
//
// A backend owns its memory and its kernels; the model owns the order of the ops. Every op takes
// its sizes from the shapes of the tensors it is given (for a padded step, the padded shapes),
// and reads per-step values (token ids, positions, slots, offsets) from tensors, never from
// host arguments, so that a step can later be captured once and replayed with new inputs.
//
// Shape conventions: n = tokens in the step, H = hidden size, hd = head dim, nh/nkv = query and
// KV heads, V = vocabulary. Activations are row-major [n, features].
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention_contract.h"
#include "attention/attention_metadata.h"
#include "core/tensor.h"
#include "sampling/sampling_params.h"

namespace fg {

// Memory a backend handed out; the tensor is valid while `memory` is held.
struct Allocation {
  Tensor tensor;
  std::shared_ptr<void> memory;
};

// A recorded sequence of ops, replayed as recorded: same buffers, same (padded) shapes; only the
// contents of the buffers change between replays. Never patched.
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void replay() = 0;
};

// One of the linears of a linear_group: out = x · weightᵀ (+ bias), weight [rows, in], bias [rows]
// or null, out [n, rows].
struct LinearPart {
  const Tensor* weight;
  const Tensor* bias;
  Tensor out;
};

// The input of an FP8 linear: activation rows rounded to e4m3, row i = values[i, :] * scales[i].
struct Fp8Rows {
  Tensor values;  // F8_E4M3 [n, width]
  Tensor scales;  // F32 [n]
};

// One FP8 linear of a linear_fp8_group: weight F8_E4M3 [rows, in], scale F32 [rows] (one per
// output channel), bias [rows] in the activation dtype or null, out [n, rows].
struct Fp8LinearPart {
  const Tensor* weight;
  const Tensor* scale;
  const Tensor* bias;
  Tensor out;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  // The dtype of activations between ops (F32 on the CPU reference, BF16 on GPUs).
  virtual DType activation_dtype() const = 0;
  // The dtype this backend keeps a float weight stored as `stored` (BF16, F16 or F32) in: the
  // loader converts on the host where they differ (the CPU reference runs them as they are; the
  // CUDA kernels are BF16 only). FP8 weights stay F8_E4M3 with their scales (linear_fp8_group).
  virtual DType weight_dtype(DType stored) const { return stored; }

  virtual Allocation allocate(DType dtype, std::initializer_list<int64_t> dims) = 0;
  // Copies between host memory and a tensor of this backend (same byte count).
  virtual void copy_from_host(const Tensor& dst, const void* src) = 0;
  virtual void copy_to_host(void* dst, const Tensor& src) = 0;
  // Waits until every op issued so far has finished (host copies included).
  virtual void synchronize() = 0;
  // Host memory the backend can copy from asynchronously (pinned on a GPU).
  virtual Allocation allocate_staging(size_t bytes) = 0;

  // Graph capture: between begin_capture() and end_capture(), ops are recorded, not run.
  virtual bool supports_graphs() const { return false; }
  virtual void begin_capture() { fail("the {} backend cannot capture graphs", name()); }
  virtual std::unique_ptr<Graph> end_capture() { fail("the {} backend cannot capture graphs", name()); }
  // The token counts graphs are captured for. A backend whose kernels pick an algorithm by row
  // count (cuBLASLt) must use, for n rows, the one of the smallest size >= n, so that an eager
  // run of n rows computes each row as the graph that holds n does (DESIGN.md point 7).
  virtual void set_capture_sizes(const std::vector<int64_t>& sizes) { (void)sizes; }
  // Bytes of device memory held by captured graphs themselves (0 where they hold none).
  virtual size_t graph_memory_bytes() const { return 0; }
  // Batch invariance: when on, every op computes each row with arithmetic that does not depend on
  // the other rows of the step (its batch size, its neighbours, prefill or decode), so a request's
  // tokens do not depend on what it is batched with. Backends whose ops are invariant anyway (the
  // CPU's) ignore it; the CUDA backend then runs every linear through the small-n kernel in
  // groups of 16 rows (slower for prefill).
  virtual void set_batch_invariant(bool on) { (void)on; }

  // The attention implementation's graph-support level and padding contract (DESIGN.md 4, 5).
  virtual GraphSupport attention_graph_support() const = 0;
  virtual const PaddingContract& attention_contract() const = 0;

  // out[i] = table[ids[i]]. ids I32 [n], table [V, H], out [n, H].
  virtual void embedding(const Tensor& ids, const Tensor& table, const Tensor& out) = 0;
  // out = x / rms(x) * weight, per row. x [n, H], weight [H], out [n, H].
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) = 0;
  // residual += x; out = rms_norm(residual). The residual stream and the norm in one pass.
  virtual void add_rms_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                            const Tensor& out) = 0;
  // residual += x, elementwise (the sum rounded to the activation dtype). Both [n, H].
  virtual void add(const Tensor& residual, const Tensor& x) = 0;
  // out = x · weightᵀ (+ bias). x [n, in], weight [out, in], bias [out] or undefined, out [n, out].
  virtual void linear(const Tensor& x, const Tensor& weight, const Tensor* bias, const Tensor& out) = 0;
  // linear() for each part, all over the same x. A backend may run the parts as one matmul where
  // their weights (and biases) lie back to back in memory, as the model loader places a layer's
  // q/k/v and gate/up projections on a device: then a part's bits are those of that one matmul
  // (at every n, like linear's), which may differ from its own linear's in the last place.
  virtual void linear_group(const Tensor& x, const std::vector<LinearPart>& parts) {
    for (const LinearPart& p : parts) linear(x, *p.weight, p.bias, p.out);
  }
  // FP8 linears (model/quantization_config.h): the weight F8_E4M3 [out, in] with a scale per
  // output channel F32 [out] (weight = e4m3 * scale), its input rounded to e4m3 with a scale per
  // token row first (Fp8Rows).
  //
  // Rounds each row of x [n, width] (the activation dtype) to e4m3: its scale s is static_scale
  // when that is > 0, else max|x_row| / 448 in fp32 (1 for a row of zeros); out.values =
  // e4m3(clamp(x / s, -448, 448)), the division in fp32, rounded to nearest even as torch's
  // .to(torch.float8_e4m3fn) does; out.scales = s.
  virtual void quantize_fp8(const Tensor& x, float static_scale, const Fp8Rows& out) {
    (void)x, (void)static_scale, (void)out;
    fail("the {} backend does not run FP8 linears", name());
  }
  // rms_norm of x into normed (scratch [n, H]), then quantize_fp8 of it. A backend may run both
  // as one kernel: out then holds the bits of the two steps, and normed is left unwritten.
  virtual void rms_norm_quantize_fp8(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                                     float static_scale, const Fp8Rows& out) {
    rms_norm(x, norm_weight, eps, normed);
    quantize_fp8(normed, static_scale, out);
  }
  // silu_mul of gate and up into act (scratch [n, I]), then quantize_fp8 of it; fusable likewise.
  virtual void silu_mul_quantize_fp8(const Tensor& gate, const Tensor& up, const Tensor& act, float static_scale,
                                     const Fp8Rows& out) {
    silu_mul(gate, up, act);
    quantize_fp8(act, static_scale, out);
  }
  // For each part: out[i, j] = (sum_k x.values[i, k] * weight[j, k]) * x.scales[i] * scale[j]
  // (+ bias[j]), the products of e4m3 values exact, the sum and the scaling in fp32, one rounding
  // to the activation dtype. As in linear_group, a backend may run parts whose weights, scales
  // (and biases) lie back to back as one matmul.
  virtual void linear_fp8_group(const Fp8Rows& x, const std::vector<Fp8LinearPart>& parts) {
    (void)x, (void)parts;
    fail("the {} backend does not run FP8 linears", name());
  }
  // residual += the FP8 linear of x: linear_fp8_group into out (scratch [n, H]), then add().
  virtual void linear_fp8_residual_add(const Fp8Rows& x, const Tensor& weight, const Tensor& scale, const Tensor& out,
                                       const Tensor& residual) {
    linear_fp8_group(x, {{&weight, &scale, nullptr, out}});
    add(residual, out);
  }
  // The MLP's first half in FP8 up to down_proj's input: the gate and up linears of x
  // (linear_fp8_group of the two parts), then silu_mul_quantize_fp8 of their outputs (act: scratch
  // [n, I]) into out. A backend may compute silu(gate) * up in the linears' store, into act: out
  // then holds the same bits, and the parts' outputs are left unwritten.
  virtual void linear_fp8_silu_mul_quantize(const Fp8Rows& x, const Fp8LinearPart& gate, const Fp8LinearPart& up,
                                            const Tensor& act, float static_scale, const Fp8Rows& out) {
    linear_fp8_group(x, {gate, up});
    silu_mul_quantize_fp8(gate.out, up.out, act, static_scale, out);
  }
  // A weight w [out, in] (a float dtype this backend keeps weights in) quantized per output
  // channel: scales[j] = max_k |w[j, k]| / 448 in fp32 (1 where 0), q[j, k] = e4m3(w[j, k] /
  // scales[j]) rounded as in quantize_fp8. q F8_E4M3 [out, in], scales F32 [out].
  virtual void quantize_weight_fp8(const Tensor& w, const Tensor& q, const Tensor& scales) {
    (void)w, (void)q, (void)scales;
    fail("the {} backend does not quantize weights to FP8", name());
  }
  // In place, per head: x[i, h, :] = rms_norm(x[i, h, :]) * weight. x [n, heads * hd], weight [hd].
  virtual void head_rms_norm(const Tensor& x, const Tensor& weight, float eps) = 0;
  // Rotates q and k in place by the RoPE angles of each token's position (rotate-half layout),
  // then writes k and v to the cache slot of each token; tokens with a negative slot are not
  // written. q [n, nh * hd], k and v [n, nkv * hd], positions I32 [n], slot_mapping I64 [n],
  // rope_cos_sin F32 [max_positions, hd] (cos of the hd/2 frequencies, then their sin).
  virtual void rope_and_cache_write(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                                    const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                    const KvCacheLayer& cache) = 0;
  // The q/k steps of a model with q/k norms: head_rms_norm of q with q_norm and of k with k_norm,
  // then rope_and_cache_write. A backend may run them as one kernel: q, k and the cache then hold
  // the bits of the three steps.
  virtual void qk_norm_rope_cache_write(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                        const Tensor& k_norm, float eps, const Tensor& positions,
                                        const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                        const KvCacheLayer& cache) {
    head_rms_norm(q, q_norm, eps);
    head_rms_norm(k, k_norm, eps);
    rope_and_cache_write(q, k, v, positions, slot_mapping, rope_cos_sin, cache);
  }
  // Causal attention of each request's query tokens over its cached context: query token j of a
  // request with n_q query tokens and context length L attends to context positions
  // [0, L - n_q + j]. q and out [n, nh * hd]. Query tokens that belong to no request are not
  // written.
  virtual void attention(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                         const Tensor& out) = 0;
  // out = silu(gate) * up. gate, up, out [n, I].
  virtual void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) = 0;
  // The first half of a gated MLP: linear_group of the gate and up projections into gate_out and
  // up_out, then silu_mul of them into out. gate and up [I, in], gate_out, up_out and out [n, I].
  // A backend may run the three as one kernel where the gate and up weights lie back to back (as
  // linear_group may); out then has the bits of the three steps, and gate_out and up_out are
  // scratch it may leave unwritten. Where up_out also follows gate_out in memory, the two are one
  // scratch of [n, 2I] that a backend may run the gate/up span into as one matmul; out then has
  // the bits of that matmul's halves through silu_mul.
  virtual void linear_silu_mul(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                               const Tensor& up_out, const Tensor& out) {
    linear_group(x, {{&gate, nullptr, gate_out}, {&up, nullptr, up_out}});
    silu_mul(gate_out, up_out, out);
  }
  // The ops that meet the residual stream, as the layer loop runs them. A backend may fuse each
  // into its matmul; the defaults are the steps they stand for, and their scratch tensors hold
  // the intermediate results there (a fusing backend may leave them unwritten).
  //
  // residual += x · weightᵀ: linear() into out (scratch [n, H]), then add() of it.
  virtual void linear_residual_add(const Tensor& x, const Tensor& weight, const Tensor& out,
                                   const Tensor& residual) {
    linear(x, weight, nullptr, out);
    add(residual, out);
  }
  // linear_group over rms_norm(x) with norm_weight: the norm into normed (scratch [n, H]), then
  // the parts. A backend that normalizes inside the matmul computes the same function with its
  // roundings elsewhere (bf16 of norm_weight ⊙ x in the dot product, the 1 / rms in fp32 after it).
  // span is scratch [n, the parts' rows in all] (or undefined), apart from the parts' outputs, for
  // a backend that runs the parts as one matmul into it and copies them out: the parts then hold
  // the bits of that matmul's columns.
  virtual void rms_norm_linear_group(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                                     const Tensor& span, const std::vector<LinearPart>& parts) {
    (void)span;
    rms_norm(x, norm_weight, eps, normed);
    linear_group(normed, parts);
  }
  // The attention block's first steps in a model without q/k norms: rms_norm_linear_group into
  // the q, k and v parts (in that order), then rope_and_cache_write of them. A backend may run
  // both as one kernel: q, k, v and the cache then hold what the two steps leave there, and
  // normed is scratch. span is scratch too: [n, q + 2 kv] (or undefined), apart from q, k and v,
  // for a backend that runs the parts as one matmul into it and RoPE from its columns; q, k, v
  // and the cache then hold the bits of those steps.
  virtual void rms_norm_qkv_rope_cache_write(const Tensor& x, const Tensor& norm_weight, float eps,
                                             const Tensor& normed, const Tensor& span,
                                             const std::vector<LinearPart>& qkv, const Tensor& positions,
                                             const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                             const KvCacheLayer& cache) {
    FG_CHECK(qkv.size() == 3, "rms_norm_qkv_rope_cache_write takes the q, k and v parts, got {} parts", qkv.size());
    rms_norm_linear_group(x, norm_weight, eps, normed, span, qkv);
    rope_and_cache_write(qkv[0].out, qkv[1].out, qkv[2].out, positions, slot_mapping, rope_cos_sin, cache);
  }
  // The same for FP8 q/k/v linears over rows already rounded to e4m3: linear_fp8_group into the
  // q, k and v parts (in that order), then rope_and_cache_write of them, run as one kernel where a
  // backend can, with the bits of the two steps.
  virtual void linear_fp8_qkv_rope_cache_write(const Fp8Rows& x, const std::vector<Fp8LinearPart>& qkv,
                                               const Tensor& positions, const Tensor& slot_mapping,
                                               const Tensor& rope_cos_sin, const KvCacheLayer& cache) {
    FG_CHECK(qkv.size() == 3, "linear_fp8_qkv_rope_cache_write takes the q, k and v parts, got {} parts",
             qkv.size());
    linear_fp8_group(x, qkv);
    rope_and_cache_write(qkv[0].out, qkv[1].out, qkv[2].out, positions, slot_mapping, rope_cos_sin, cache);
  }
  // linear_silu_mul over rms_norm(x) with norm_weight, normed as in rms_norm_linear_group.
  virtual void rms_norm_linear_silu_mul(const Tensor& x, const Tensor& norm_weight, float eps, const Tensor& normed,
                                        const Tensor& gate, const Tensor& up, const Tensor& gate_out,
                                        const Tensor& up_out, const Tensor& out) {
    rms_norm(x, norm_weight, eps, normed);
    linear_silu_mul(normed, gate, up, gate_out, up_out, out);
  }
  // Tensor parallelism (backend/communicator.h): the collectives over the communicator of the
  // rank this backend runs, recorded in graphs like any other op. x and shard/out F32.
  // In place: x = the sum of every rank's x, in rank order (Communicator::all_reduce_sum).
  virtual void all_reduce_sum(const Tensor& x) {
    (void)x;
    fail("the {} backend has no tensor-parallel communicator", name());
  }
  // Every rank's shard [n, C] into out [n, ranks * C] (Communicator::all_gather_columns).
  virtual void all_gather_columns(const Tensor& shard, const Tensor& out) {
    (void)shard, (void)out;
    fail("the {} backend has no tensor-parallel communicator", name());
  }
  // out[i] = x[indices[i]]. x [n, H], indices I32 [m], out [m, H].
  virtual void gather_rows(const Tensor& x, const Tensor& indices, const Tensor& out) = 0;
  // One token id per row of logits F32 [m, V] into out_ids I32 [m], with the semantics written in
  // sampling/sampling_params.h; a row's result depends only on its logits and values.
  virtual void sample(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids) = 0;

  // The rest of sampling_params.h's definition, as a step runs it (model_runner.cpp):
  // apply_token_mask, raw_logprobs, apply_penalties, sample, sampled_logprobs. m = logits.dim(0) rows; each reads
  // only row r's parameters and entries for row r, so a row's results never depend on the batch,
  // and a row with num_logprobs -1 (or an empty penalty list) is skipped after one read.
  //
  // Item 0's first step, before every other sampling op, in place on logits F32 [m, V]: in each row
  // r whose mask (I32 [>= m, ceil(V / 32)], bit t % 32 of word t / 32 = token t allowed) allows
  // some token of [0, V), every token it does not allow becomes -inf; a row that allows none is left
  // as it is. An all-ones row (unconstrained, padded) is read and left as it is.
  virtual void apply_token_mask(const Tensor& logits, const Tensor& mask) = 0;
  // Before apply_token_mask, on mask I32 [rows, words]: waits until the host has published one
  // more time than steps have waited (*upload.published reaches waited + 1), counts the wait in
  // upload.waited, then copies every row r with changed[r] != 0 from the mirror into mask. A
  // backend that runs ops as they are called (the CPU) requires the publication to be there
  // already and fails otherwise; a GPU waits for it, and gives up with a device trap after
  // seconds (a host that never publishes is a bug, and a hang would hide it).
  virtual void upload_token_mask(const Tensor& mask, const TokenMaskUpload& upload) = 0;
  // True when ops run later on a device, so that the host may work while a launched step runs.
  virtual bool runs_behind_host() const { return false; }
  // Item 4 on the RAW logits F32 [m, V], before apply_penalties: for rows with num_logprobs >= 0,
  // out.logit_max, out.mass and the top min(num_logprobs, V) of out.top_ids / out.top_logprobs.
  virtual void raw_logprobs(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out) = 0;
  // Item 0, in place on logits F32 [m, V]: every entry of row r's penalty list saves the raw logit
  // of its token into penalties.original, then penalizes it with row r's repetition_penalty,
  // frequency_penalty and presence_penalty.
  virtual void apply_penalties(const Tensor& logits, const SamplingTensors& params,
                               const PenaltyTensors& penalties) = 0;
  // After sample(): out.sampled[r] = the raw logprob of ids[r] (I32 [m]) for rows with
  // num_logprobs >= 0, from out.logit_max / out.mass and the token's raw logit (penalties.original
  // when it is in row r's list, else the logits, which the penalties did not touch).
  virtual void sampled_logprobs(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                                const PenaltyTensors& penalties, const LogprobTensors& out) = 0;
};

}  // namespace fg
