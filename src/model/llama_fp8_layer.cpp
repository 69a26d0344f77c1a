// model/llama_fp8_layer.cpp — the layer loop's body for layers with FP8 linears.
//
// An FP8 linear rounds its input to e4m3 (a scale per token, or the checkpoint's fixed scale)
// before its matmul, so the norm or SiLU-and-multiply in front of it produces rounded rows
// (Backend::rms_norm_quantize_fp8, silu_mul_quantize_fp8) rather than feeding the fused norm +
// matmul ops of the BF16 layer. Linears the checkpoint left unquantized run as in forward().
#include <algorithm>

#include "model/llama_model.h"

namespace fg {

namespace {

// Whether every linear of a group rounds its input the same way (dynamic, or one static scale), so
// that one rounding of the normed rows feeds them all.
bool round_alike(const std::vector<LinearInput>& inputs) {
  return std::all_of(inputs.begin(), inputs.end(), [&](const LinearInput& in) { return in == inputs[0]; });
}

}  // namespace

Fp8Rows LlamaModel::fp8_rows(int64_t n, int64_t width) const {
  return {fp8_values_.tensor.rows(0, n * width).view({n, width}), fp8_scales_.tensor.rows(0, n)};
}

void LlamaModel::normed_fp8_group(const Tensor& x, const Tensor& norm_weight, const std::vector<Fp8LinearPart>& parts,
                                  const std::vector<LinearInput>& inputs, int64_t n) {
  Backend& b = backend_;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const Tensor normed = normed_.tensor.rows(0, n);
  const Fp8Rows rows = fp8_rows(n, x.dim(1));
  if (round_alike(inputs)) {
    b.rms_norm_quantize_fp8(x, norm_weight, eps, normed, inputs[0].static_scale(), rows);
    b.linear_fp8_group(rows, parts);
    return;
  }
  // Static scales that differ between q, k and v: each part rounds the normalized rows its own way.
  b.rms_norm(x, norm_weight, eps, normed);
  for (size_t i = 0; i < parts.size(); ++i) {
    b.quantize_fp8(normed, inputs[i].static_scale(), rows);
    b.linear_fp8_group(rows, {parts[i]});
  }
}

void LlamaModel::fp8_layer(int64_t l, const StepInputs& step, const KvCache& kv, int64_t n) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[l];
  Backend& b = backend_;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const Tensor residual = residual_.tensor.rows(0, n), normed = normed_.tensor.rows(0, n);
  const Tensor q = q_.tensor.rows(0, n), k = k_.tensor.rows(0, n), v = v_.tensor.rows(0, n);
  const Tensor attn_out = attn_out_.tensor.rows(0, n), proj_out = proj_out_.tensor.rows(0, n);
  const Tensor mlp_act = mlp_act_.tensor.rows(0, n);
  const Tensor span = span_.tensor.view({span_.tensor.numel()});
  const int64_t I = c.intermediate_size, qkv_width = c.q_size() + 2 * c.kv_size();
  const Tensor gate = span.rows(0, n * I).view({n, I}), up = span.rows(n * I, n * I).view({n, I});

  // Attention block. FP8 q/k/v over rows that all round alike, without q/k norms: the linears,
  // RoPE and the cache write in one op (one kernel where the backend fuses them).
  const std::vector<Fp8LinearPart> qkv_fp8 = {{&w.q_proj, &w.q_scale, c.qkv_bias ? &w.q_bias : nullptr, q},
                                              {&w.k_proj, &w.k_scale, c.qkv_bias ? &w.k_bias : nullptr, k},
                                              {&w.v_proj, &w.v_scale, c.qkv_bias ? &w.v_bias : nullptr, v}};
  const std::vector<LinearInput> qkv_in = {w.q_in, w.k_in, w.v_in};
  bool rope_done = false;
  if (w.qkv_fp8() && round_alike(qkv_in) && !c.qk_norm) {
    const Fp8Rows rows = fp8_rows(n, residual.dim(1));
    b.rms_norm_quantize_fp8(residual, w.input_norm, eps, normed, w.q_in.static_scale(), rows);
    b.linear_fp8_qkv_rope_cache_write(rows, qkv_fp8, step.positions, step.slot_mapping, rope_cos_sin_.tensor,
                                      kv.layers[l]);
    rope_done = true;
  } else if (w.qkv_fp8()) {
    normed_fp8_group(residual, w.input_norm, qkv_fp8, qkv_in, n);
  } else {
    b.rms_norm_linear_group(residual, w.input_norm, eps, normed, span.rows(0, n * qkv_width).view({n, qkv_width}),
                            {{&w.q_proj, c.qkv_bias ? &w.q_bias : nullptr, q},
                             {&w.k_proj, c.qkv_bias ? &w.k_bias : nullptr, k},
                             {&w.v_proj, c.qkv_bias ? &w.v_bias : nullptr, v}});
  }
  if (c.qk_norm) {
    b.qk_norm_rope_cache_write(q, k, v, w.q_norm, w.k_norm, eps, step.positions, step.slot_mapping,
                               rope_cos_sin_.tensor, kv.layers[l]);
  } else if (!rope_done) {
    b.rope_and_cache_write(q, k, v, step.positions, step.slot_mapping, rope_cos_sin_.tensor, kv.layers[l]);
  }
  b.attention(q, kv.layers[l], step.attention, attention_scale_, attn_out);
  if (w.o_fp8()) {
    const Fp8Rows rows = fp8_rows(n, c.q_size());
    b.quantize_fp8(attn_out, w.o_in.static_scale(), rows);
    b.linear_fp8_residual_add(rows, w.o_proj, w.o_scale, proj_out, residual);
  } else {
    b.linear_residual_add(attn_out, w.o_proj, proj_out, residual);
  }

  // MLP block: gate and up, SiLU-and-multiply rounding its output where down_proj is FP8 (in one
  // op with gate and up where they round their input alike).
  const Fp8Rows down_rows = fp8_rows(n, I);
  const Fp8LinearPart gate_part{&w.gate_proj, &w.gate_scale, nullptr, gate};
  const Fp8LinearPart up_part{&w.up_proj, &w.up_scale, nullptr, up};
  if (w.gate_up_fp8() && w.down_fp8() && round_alike({w.gate_in, w.up_in})) {
    const Fp8Rows rows = fp8_rows(n, residual.dim(1));
    b.rms_norm_quantize_fp8(residual, w.post_attention_norm, eps, normed, w.gate_in.static_scale(), rows);
    b.linear_fp8_silu_mul_quantize(rows, gate_part, up_part, mlp_act, w.down_in.static_scale(), down_rows);
  } else if (w.gate_up_fp8()) {
    normed_fp8_group(residual, w.post_attention_norm, {gate_part, up_part}, {w.gate_in, w.up_in}, n);
    if (w.down_fp8()) {
      b.silu_mul_quantize_fp8(gate, up, mlp_act, w.down_in.static_scale(), down_rows);
    } else {
      b.silu_mul(gate, up, mlp_act);
    }
  } else {
    b.rms_norm_linear_silu_mul(residual, w.post_attention_norm, eps, normed, w.gate_proj, w.up_proj, gate, up,
                               mlp_act);
    if (w.down_fp8()) b.quantize_fp8(mlp_act, w.down_in.static_scale(), down_rows);
  }
  if (w.down_fp8()) {
    b.linear_fp8_residual_add(down_rows, w.down_proj, w.down_scale, proj_out, residual);
  } else {
    b.linear_residual_add(mlp_act, w.down_proj, proj_out, residual);
  }
}

}  // namespace fg
