// tests/test_backend_ops.cpp — the CPU backend's residual-stream ops (Backend's defaults: add,
// linear_residual_add, rms_norm_linear_group, rms_norm_linear_silu_mul) against the ops they
// stand for. The layer loop moved from add_rms_norm to these; on the CPU reference they must
// compute exactly what the old sequence did (same fp32 operations in the same order), so the
// fixtures' agreement carries over bit for bit.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace fg {
namespace {

std::vector<float> random_values(size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Tensor host(std::vector<float>& v, std::initializer_list<int64_t> dims) { return Tensor(v.data(), DType::kF32, dims); }

TEST(BackendOps, CpuResidualStreamOpsMatchTheOpsTheyStandFor) {
  CpuBackend cpu;
  std::mt19937 rng(7);
  const int64_t n = 5, hidden = 48, inter = 40;
  std::vector<float> x = random_values(n * hidden, rng, 1.0f), residual = random_values(n * hidden, rng, 2.0f);
  std::vector<float> w_o = random_values(hidden * hidden, rng, 0.2f), g = random_values(hidden, rng, 1.0f);
  std::vector<float> w_gate = random_values(inter * hidden, rng, 0.2f), w_up = random_values(inter * hidden, rng, 0.2f);

  // Old: linear into proj, add_rms_norm into normed, linear_silu_mul of normed.
  std::vector<float> old_residual = residual, proj(n * hidden), old_normed(n * hidden);
  std::vector<float> old_gate(n * inter), old_up(n * inter), old_act(n * inter);
  cpu.linear(host(x, {n, hidden}), host(w_o, {hidden, hidden}), nullptr, host(proj, {n, hidden}));
  cpu.add_rms_norm(host(old_residual, {n, hidden}), host(proj, {n, hidden}), host(g, {hidden}), 1e-5f,
                   host(old_normed, {n, hidden}));
  cpu.linear_silu_mul(host(old_normed, {n, hidden}), host(w_gate, {inter, hidden}), host(w_up, {inter, hidden}),
                      host(old_gate, {n, inter}), host(old_up, {n, inter}), host(old_act, {n, inter}));

  // New: linear_residual_add, then rms_norm_linear_silu_mul.
  std::vector<float> new_residual = residual, scratch(n * hidden), new_normed(n * hidden);
  std::vector<float> new_gate(n * inter), new_up(n * inter), new_act(n * inter);
  cpu.linear_residual_add(host(x, {n, hidden}), host(w_o, {hidden, hidden}), host(scratch, {n, hidden}),
                          host(new_residual, {n, hidden}));
  cpu.rms_norm_linear_silu_mul(host(new_residual, {n, hidden}), host(g, {hidden}), 1e-5f, host(new_normed, {n, hidden}),
                               host(w_gate, {inter, hidden}), host(w_up, {inter, hidden}), host(new_gate, {n, inter}),
                               host(new_up, {n, inter}), host(new_act, {n, inter}));
  cpu.synchronize();
  EXPECT_EQ(new_residual, old_residual);
  EXPECT_EQ(new_normed, old_normed);
  EXPECT_EQ(new_act, old_act);

  // rms_norm_linear_group: the norm, then each part.
  std::vector<float> q(n * inter), k(n * inter), q_ref(n * inter), k_ref(n * inter), normed(n * hidden);
  const Tensor wq = host(w_gate, {inter, hidden}), wk = host(w_up, {inter, hidden});
  cpu.rms_norm_linear_group(host(new_residual, {n, hidden}), host(g, {hidden}), 1e-5f, host(normed, {n, hidden}),
                            Tensor(), {{&wq, nullptr, host(q, {n, inter})}, {&wk, nullptr, host(k, {n, inter})}});
  cpu.linear(host(new_normed, {n, hidden}), wq, nullptr, host(q_ref, {n, inter}));
  cpu.linear(host(new_normed, {n, hidden}), wk, nullptr, host(k_ref, {n, inter}));
  cpu.synchronize();
  EXPECT_EQ(normed, new_normed);
  EXPECT_EQ(q, q_ref);
  EXPECT_EQ(k, k_ref);
}

}  // namespace
}  // namespace fg
