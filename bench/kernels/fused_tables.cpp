// bench/kernels/fused_tables.cpp — the fused-op tables of `bench kernels` (gated_mlp,
// residual_stream): each fused launch against the launches it replaces, back to back in a graph.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "bench/kernels/bench_support.h"
#include "bench/kernels/tables.h"
#include "backend/cuda/streamed_linear.h"

namespace fg::bench {

// The MLP's first half as the model runs it (Backend::linear_silu_mul): the gated streamed kernel
// (one launch) against the two steps it replaces (the streamed gate/up span, then silu_mul) and
// against cuBLASLt's two GEMMs then silu_mul.
nlohmann::json bench_gated_mlp(CudaBackend& backend, double copy_gbps) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nGate/up + SiLU-and-multiply (weight bytes / time; % of copy bandwidth). fused = one gated launch;\n"
             "span + silu = the streamed gate/up span, then silu_mul; cublas = two cuBLASLt GEMMs, then silu_mul.\n");
  fmt::print("{:<14} {:>6} {:>6} {:>3} | {:>8} {:>5} | {:>11} {:>5} | {:>9} {:>5} | {:>8} {:>8}\n", "model", "inter",
             "in", "M", "fused us", "%", "span+silu", "%", "cublas us", "%", "vs span", "vs lt");
  for (const ModelShape& m : model_shapes()) {
    const LinearShape span{"gate_up_proj", 2 * m.intermediate, m.hidden};
    if (!cuda::gated_linear_applies(m.intermediate, m.hidden, backend.sm_count())) continue;
    RandomTensors random{backend};
    const size_t weight_bytes = static_cast<size_t>(span.out_features * span.in) * 2;
    const std::vector<Tensor> weights = rotated_weights(random, span);
    const int copies = static_cast<int>(weights.size());
    const Tensor x = random.bf16({16, m.hidden}, 0.0f, 1.0f);
    Allocation gate = backend.allocate(DType::kBF16, {16, m.intermediate});
    Allocation up = backend.allocate(DType::kBF16, {16, m.intermediate});
    Allocation act = backend.allocate(DType::kBF16, {16, m.intermediate});
    for (int64_t rows_m : {1, 4, 16}) {
      const Tensor x_m = x.rows(0, rows_m), gate_m = gate.tensor.rows(0, rows_m), up_m = up.tensor.rows(0, rows_m),
                   act_m = act.tensor.rows(0, rows_m);
      auto halves = [&](int i) {
        return std::pair{weights[i % copies].rows(0, m.intermediate),
                         weights[i % copies].rows(m.intermediate, m.intermediate)};
      };
      const double fused = time_per_launch_us(backend, std::max(kBatch, copies), [&](int i) {
        const auto [g, u] = halves(i);
        backend.linear_silu_mul(x_m, g, u, gate_m, up_m, act_m);
      });
      const double two_steps = time_per_launch_us(backend, std::max(kBatch, copies), [&](int i) {
        const auto [g, u] = halves(i);
        backend.linear_group(x_m, {{&g, nullptr, gate_m}, {&u, nullptr, up_m}});
        backend.silu_mul(gate_m, up_m, act_m);
      });
      const double cublas = time_per_launch_us(backend, std::max(kBatch, copies), [&](int i) {
        const auto [g, u] = halves(i);
        backend.linear_with(LinearPath::kCublasLt, x_m, g, nullptr, gate_m);
        backend.linear_with(LinearPath::kCublasLt, x_m, u, nullptr, up_m);
        backend.silu_mul(gate_m, up_m, act_m);
      });
      auto pct = [&](double us) { return 100 * (weight_bytes / (us * 1e-6) / 1e9) / copy_gbps; };
      fmt::print("{:<14} {:>6} {:>6} {:>3} | {:>8.2f} {:>4.0f}% | {:>11.2f} {:>4.0f}% | {:>9.2f} {:>4.0f}% | {:>7.2f}x "
                 "{:>7.2f}x\n",
                 m.name, m.intermediate, m.hidden, rows_m, fused, pct(fused), two_steps, pct(two_steps), cublas,
                 pct(cublas), two_steps / fused, cublas / fused);
      rows.push_back({{"model", m.name}, {"intermediate", m.intermediate}, {"in", m.hidden}, {"m", rows_m},
                      {"fused_us", fused}, {"span_then_silu_us", two_steps}, {"cublaslt_then_silu_us", cublas},
                      {"fused_pct_of_copy", pct(fused)}});
    }
  }
  return rows;
}

// Where the residual stream meets the matmuls (Backend::linear_residual_add, rms_norm_linear_group,
// rms_norm_linear_silu_mul), against the steps they replace: each fused op alone against its plain
// matmul, and the two pairs a layer runs (o_proj then the MLP's first half; down_proj then the next
// layer's q/k/v) against the three launches each pair took before (the matmul, add_rms_norm, the
// next matmul), back to back in a graph like a decode step's chain.
nlohmann::json bench_residual_stream(CudaBackend& backend) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nThe residual stream in the matmuls (us per launch or pair, back to back in a graph). plain = the\n"
             "matmul alone; fused = with the residual add in its store or the norm in its input; steps = matmul,\n"
             "add_rms_norm, next matmul (before); pair = the two fused ops.\n");
  fmt::print("{:<14} {:>3} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8}\n", "model", "M",
             "o plain", "o +add", "qkv", "qkv+norm", "gu plain", "gu+norm", "o steps", "o pair", "dn steps",
             "dn pair");
  for (const ModelShape& m : model_shapes()) {
    RandomTensors random{backend};
    const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim, qkv_rows = q + 2 * kv;
    const std::vector<Tensor> o_w = rotated_weights(random, {"o_proj", m.hidden, q});
    const std::vector<Tensor> qkv_w = rotated_weights(random, {"qkv_proj", qkv_rows, m.hidden});
    const std::vector<Tensor> gu_w = rotated_weights(random, {"gate_up_proj", 2 * m.intermediate, m.hidden});
    const std::vector<Tensor> down_w = rotated_weights(random, {"down_proj", m.hidden, m.intermediate});
    const int launches = std::max<int>({kBatch, static_cast<int>(o_w.size()), static_cast<int>(qkv_w.size()),
                                        static_cast<int>(gu_w.size()), static_cast<int>(down_w.size())});
    const Tensor norm_w = random.bf16({m.hidden}, 1.0f, 0.1f);
    const Tensor attn = random.bf16({16, q}, 0.0f, 1.0f), act = random.bf16({16, m.intermediate}, 0.0f, 1.0f);
    const Tensor residual = random.bf16({16, m.hidden}, 0.0f, 1.0f);
    Allocation normed = backend.allocate(DType::kBF16, {16, m.hidden});
    Allocation proj = backend.allocate(DType::kBF16, {16, m.hidden});
    Allocation qkv_out = backend.allocate(DType::kBF16, {16, qkv_rows});
    Allocation gate = backend.allocate(DType::kBF16, {16, m.intermediate});
    Allocation up = backend.allocate(DType::kBF16, {16, m.intermediate});
    Allocation mlp = backend.allocate(DType::kBF16, {16, m.intermediate});
    for (int64_t rows_m : {1, 16}) {
      const Tensor res = residual.rows(0, rows_m), nrm = normed.tensor.rows(0, rows_m), prj = proj.tensor.rows(0, rows_m);
      const Tensor qkv = qkv_out.tensor.rows(0, rows_m), g = gate.tensor.rows(0, rows_m), u = up.tensor.rows(0, rows_m);
      const Tensor out = mlp.tensor.rows(0, rows_m), a = attn.rows(0, rows_m), x = act.rows(0, rows_m);
      auto gate_up = [&](int i) {
        const Tensor& span = gu_w[i % gu_w.size()];
        return std::pair{span.rows(0, m.intermediate), span.rows(m.intermediate, m.intermediate)};
      };
      auto o_steps = [&](int i, bool fused) {
        const auto [gw, uw] = gate_up(i);
        if (fused) {
          backend.linear_residual_add(a, o_w[i % o_w.size()], prj, res);
          backend.rms_norm_linear_silu_mul(res, norm_w, 1e-5f, nrm, gw, uw, g, u, out);
        } else {
          backend.linear(a, o_w[i % o_w.size()], nullptr, prj);
          backend.add_rms_norm(res, prj, norm_w, 1e-5f, nrm);
          backend.linear_silu_mul(nrm, gw, uw, g, u, out);
        }
      };
      auto down_steps = [&](int i, bool fused) {
        const Tensor& w = qkv_w[i % qkv_w.size()];
        if (fused) {
          backend.linear_residual_add(x, down_w[i % down_w.size()], prj, res);
          backend.rms_norm_linear_group(res, norm_w, 1e-5f, nrm, Tensor(), {{&w, nullptr, qkv}});
        } else {
          backend.linear(x, down_w[i % down_w.size()], nullptr, prj);
          backend.add_rms_norm(res, prj, norm_w, 1e-5f, nrm);
          backend.linear_group(nrm, {{&w, nullptr, qkv}});
        }
      };
      auto time = [&](const std::function<void(int)>& launch) { return time_per_launch_us(backend, launches, launch); };
      const double o_plain = time([&](int i) { backend.linear(a, o_w[i % o_w.size()], nullptr, prj); });
      const double o_add = time([&](int i) { backend.linear_residual_add(a, o_w[i % o_w.size()], prj, res); });
      const double qkv_plain = time([&](int i) { backend.linear(res, qkv_w[i % qkv_w.size()], nullptr, qkv); });
      const double qkv_norm = time([&](int i) {
        backend.rms_norm_linear_group(res, norm_w, 1e-5f, nrm, Tensor(), {{&qkv_w[i % qkv_w.size()], nullptr, qkv}});
      });
      const double gu_plain = time([&](int i) {
        const auto [gw, uw] = gate_up(i);
        backend.linear_silu_mul(res, gw, uw, g, u, out);
      });
      const double gu_norm = time([&](int i) {
        const auto [gw, uw] = gate_up(i);
        backend.rms_norm_linear_silu_mul(res, norm_w, 1e-5f, nrm, gw, uw, g, u, out);
      });
      const double o_before = time([&](int i) { o_steps(i, false); }), o_pair = time([&](int i) { o_steps(i, true); });
      const double down_before = time([&](int i) { down_steps(i, false); });
      const double down_pair = time([&](int i) { down_steps(i, true); });
      fmt::print("{:<14} {:>3} | {:>8.2f} {:>8.2f} | {:>8.2f} {:>8.2f} | {:>8.2f} {:>8.2f} | {:>8.2f} {:>8.2f} | "
                 "{:>8.2f} {:>8.2f}\n",
                 m.name, rows_m, o_plain, o_add, qkv_plain, qkv_norm, gu_plain, gu_norm, o_before, o_pair,
                 down_before, down_pair);
      rows.push_back({{"model", m.name}, {"m", rows_m}, {"o_proj_us", o_plain}, {"o_proj_add_us", o_add},
                      {"qkv_us", qkv_plain}, {"qkv_norm_us", qkv_norm}, {"gate_up_silu_us", gu_plain},
                      {"gate_up_silu_norm_us", gu_norm}, {"o_steps_us", o_before}, {"o_pair_us", o_pair},
                      {"down_steps_us", down_before}, {"down_pair_us", down_pair}});
    }
  }
  return rows;
}

}  // namespace fg::bench
