// tests/gpu/test_cuda_residual_stream.cpp — the ops where the residual stream meets the matmuls
// (Backend::add, linear_residual_add, rms_norm_linear_group, rms_norm_linear_silu_mul) on the
// CudaBackend, against the CpuBackend (the fp32 oracle) running the steps they stand for, over
// shapes that take each kernel: the direct small-n kernel, the streamed one unsplit (with a
// partial last chunk of k and a partial last pass), split into slices of k (where the norm is not
// fused and the steps run), and cuBLASLt (n > 16). Outputs and scratch are poisoned before every
// run: where the norm is fused, the `normed` scratch must stay poisoned (the fused kernel ran);
// elsewhere it must hold the norm.
//
// Tolerance: relative error <= 1e-2, as gpu_test_support.h explains. Where two GPU paths promise
// the same bits (a fused add against linear then add, a row at every n), the test wants equality.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "backend/cuda/small_n_linear.h"
#include "backend/cuda/streamed_linear.h"
#include "gpu/cuda_kernels_env.h"

namespace fg {
namespace {

using namespace cuda_kernel_test;

bool all_poison(const Tensor& t) {
  const std::vector<uint16_t> bits = gpu_test::download<uint16_t>(t);
  return std::all_of(bits.begin(), bits.end(), [](uint16_t b) { return b == kPoisonBf16; });
}

// The rows x[0, n) with some rows scaled up, so that 1 / rms differs between rows.
Bf16Values token_rows(Env& e, int64_t n, int64_t in) {
  Bf16Values x = e.random(n * in);
  for (int64_t i = 0; i < n; ++i) {
    const float scale = 1.0f + 3.0f * static_cast<float>(i % 3);
    for (int64_t k = 0; k < in; ++k) {
      const size_t at = static_cast<size_t>(i * in + k);
      x.bits[at] = float_to_bf16(x.values[at] * scale);
      x.values[at] = bf16_to_float(x.bits[at]);
    }
  }
  return x;
}

TEST(CudaResidualStream, AddMatchesCpuAndRoundsOnce) {
  FG_REQUIRE_GPU();
  Env e;
  for (auto [n, hidden] : {std::pair<int64_t, int64_t>{1, 64}, {7, 2048}, {300, 4096}}) {
    Bf16Values residual = e.random(n * hidden, 2.0f), x = e.random(n * hidden);
    const Tensor residual_gpu = e.bf16(residual, {n, hidden});
    e.gpu.add(residual_gpu, e.bf16(x, {n, hidden}));
    std::vector<float> ref = residual.values, rounded(ref.size());
    e.cpu.add(host(ref, {n, hidden}), host(x.values, {n, hidden}));
    e.cpu.synchronize();
    for (size_t i = 0; i < ref.size(); ++i) rounded[i] = bf16_to_float(float_to_bf16(ref[i]));
    const std::vector<float> got = floats(residual_gpu);
    EXPECT_EQ(got, rounded) << "n " << n << " hidden " << hidden;  // fp32 add, one rounding
    EXPECT_LE(relative_error(got, ref), kTolerance);
  }
}

// linear_residual_add: on the small-n kernels the add is the matmul's store, with the bits of
// linear() into scratch then add(); on cuBLASLt (n > 16) it is the GEMM's C, rounded once.
TEST(CudaResidualStream, LinearResidualAddHasTheBitsOfLinearThenAdd) {
  FG_REQUIRE_GPU();
  Env e;
  // direct; streamed in slices of k (the 1B down_proj); streamed unsplit with a partial chunk
  for (auto [in, out_features] : {std::pair<int64_t, int64_t>{2048, 3072}, {8192, 2048}, {520, 20000}}) {
    Bf16Values w = e.random(out_features * in, 1.0f / std::sqrt(static_cast<float>(in)));
    const Tensor w_gpu = e.bf16(w, {out_features, in});
    for (int64_t n : {1, 7, 9, 16, 17, 40}) {
      const std::string what = fmt::format("{} -> {}, n {}", in, out_features, n);
      Bf16Values x = e.random(n * in), residual = e.random(n * out_features, 2.0f);
      const Tensor x_gpu = e.bf16(x, {n, in});
      const Tensor fused = e.bf16(residual, {n, out_features}), stepwise = e.bf16(residual, {n, out_features});
      const Tensor scratch = e.poisoned(DType::kBF16, {n, out_features});
      e.gpu.linear_residual_add(x_gpu, w_gpu, scratch, fused);
      e.gpu.linear(x_gpu, w_gpu, nullptr, scratch);
      e.gpu.add(stepwise, scratch);
      std::vector<float> ref = residual.values, product(n * out_features);
      e.cpu.linear(host(x.values, {n, in}), host_bf16(w.bits, {out_features, in}), nullptr,
                   host(product, {n, out_features}));
      e.cpu.add(host(ref, {n, out_features}), host(product, {n, out_features}));
      e.cpu.synchronize();
      const std::vector<float> got = floats(fused);
      if (n <= 16) EXPECT_EQ(got, floats(stepwise)) << what;
      EXPECT_LE(relative_error(got, ref), kTolerance) << what;
    }
  }
}

// The CPU oracle of rms_norm_linear_group: the norm, then each part.
std::vector<std::vector<float>> normed_group_ref(Env& e, Bf16Values& x, Bf16Values& g, int64_t n, int64_t in,
                                                 std::vector<Bf16Values>& weights, std::vector<Bf16Values>& biases,
                                                 const std::vector<int64_t>& rows, bool with_bias) {
  std::vector<float> normed(n * in);
  e.cpu.rms_norm(host(x.values, {n, in}), host_bf16(g.bits, {in}), 1e-5f, host(normed, {n, in}));
  std::vector<std::vector<float>> out;
  for (size_t p = 0; p < rows.size(); ++p) {
    out.emplace_back(n * rows[p]);
    const Tensor b = host_bf16(biases[p].bits, {rows[p]});
    e.cpu.linear(host(normed, {n, in}), host_bf16(weights[p].bits, {rows[p], in}), with_bias ? &b : nullptr,
                 host(out.back(), {n, rows[p]}));
  }
  e.cpu.synchronize();
  return out;
}

// rms_norm_linear_group: the norm inside the matmul where the weights take the direct kernel (the
// q/k/v-like group), the two steps elsewhere (the streamed kernel, unsplit with a partial chunk of
// k and partial passes, and in slices of k; n > 16 on cuBLASLt). Against the CPU, with and without
// biases, and each row with the same bits at every n (DESIGN.md rule 7). Past 16 rows with a span
// scratch: the norm, one GEMM of the whole span into it and a copy of its columns, whose parts
// have the bits of rms_norm and one linear over the span's weight.
TEST(CudaResidualStream, RmsNormLinearGroupMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  struct GroupCase {
    int64_t in;
    std::vector<int64_t> rows;
    bool fused;  // at n <= 16
  };
  const int sms = e.gpu.sm_count();
  const std::vector<GroupCase> cases = {{2048, {2048, 512, 512}, true}, {520, {10000, 10000}, false},
                                        {8192, {2048}, false}};
  for (const GroupCase& c : cases) {
    int64_t total = 0;
    for (int64_t r : c.rows) total += r;
    const bool streamed = cuda::prefers_streamed_linear(total, c.in, sms);
    ASSERT_EQ(c.fused, !streamed && cuda::small_n_linear_takes_norm(total, sms)) << c.in << " -> " << total;
    // The parts' weights and biases back to back, as the loader places them.
    Bf16Values span = e.random(total * c.in, 1.0f / std::sqrt(static_cast<float>(c.in)));
    Bf16Values bias_span = e.random(total, 0.5f);
    Bf16Values g = e.around(c.in, 1.0f, 0.1f);
    const Tensor span_gpu = e.bf16(span, {total, c.in}), bias_gpu = e.bf16(bias_span, {total});
    const Tensor g_gpu = e.bf16(g, {c.in});
    std::vector<Bf16Values> weights, biases;
    std::vector<Tensor> part_w, part_b;
    int64_t row0 = 0;
    for (int64_t r : c.rows) {
      Bf16Values w, b;
      w.bits.assign(span.bits.begin() + row0 * c.in, span.bits.begin() + (row0 + r) * c.in);
      b.bits.assign(bias_span.bits.begin() + row0, bias_span.bits.begin() + row0 + r);
      weights.push_back(w);
      biases.push_back(b);
      part_w.push_back(span_gpu.rows(row0, r));
      part_b.push_back(bias_gpu.rows(row0, r));
      row0 += r;
    }
    Bf16Values x = token_rows(e, 17, c.in);
    const Tensor x_gpu = e.bf16(x, {17, c.in});
    for (bool with_bias : {false, true}) {
      const std::vector<std::vector<float>> ref =
          normed_group_ref(e, x, g, 17, c.in, weights, biases, c.rows, with_bias);
      std::vector<std::vector<float>> at16;
      for (int64_t n : {16, 1, 5, 8, 9, 17}) {
        const std::string what = fmt::format("{} -> {}, n {}{}", c.in, total, n, with_bias ? ", bias" : "");
        std::vector<LinearPart> parts;
        for (size_t p = 0; p < c.rows.size(); ++p)
          parts.push_back({&part_w[p], with_bias ? &part_b[p] : nullptr, e.poisoned(DType::kBF16, {n, c.rows[p]})});
        const Tensor normed = e.poisoned(DType::kBF16, {n, c.in});
        e.gpu.rms_norm_linear_group(x_gpu.rows(0, n), g_gpu, 1e-5f, normed, Tensor(), parts);
        EXPECT_EQ(all_poison(normed), c.fused && n <= 16) << what << ": the norm kernel ran or did not as expected";
        for (size_t p = 0; p < c.rows.size(); ++p) {
          const std::vector<float> got = floats(parts[p].out);
          EXPECT_LE(relative_error(got, slice(ref[p], 0, got.size())), kTolerance) << what << ", part " << p;
          if (n == 16) at16.push_back(got);
          else if (n < 16) EXPECT_EQ(got, slice(at16[p], 0, got.size())) << what << ", part " << p << " vs n 16";
        }
      }
      for (int64_t n : {17, 40}) {
        const std::string what = fmt::format("{} -> {}, n {}{}, span", c.in, total, n, with_bias ? ", bias" : "");
        const Tensor x_n = e.bf16(token_rows(e, n, c.in), {n, c.in});
        std::vector<LinearPart> parts;
        for (size_t p = 0; p < c.rows.size(); ++p)
          parts.push_back({&part_w[p], with_bias ? &part_b[p] : nullptr, e.poisoned(DType::kBF16, {n, c.rows[p]})});
        const Tensor normed = e.poisoned(DType::kBF16, {n, c.in}), span_out = e.poisoned(DType::kBF16, {n, total});
        e.gpu.rms_norm_linear_group(x_n, g_gpu, 1e-5f, normed, span_out, parts);
        // What it stands for: the norm, then one linear over the span's weight, split on the host.
        const Tensor normed_ref = e.poisoned(DType::kBF16, {n, c.in}), whole = e.poisoned(DType::kBF16, {n, total});
        e.gpu.rms_norm(x_n, g_gpu, 1e-5f, normed_ref);
        e.gpu.linear(normed_ref, span_gpu, with_bias ? &bias_gpu : nullptr, whole);
        const std::vector<float> whole_values = floats(whole);
        for (size_t p = 0, column = 0; p < c.rows.size(); column += c.rows[p], ++p) {
          std::vector<float> want;
          for (int64_t t = 0; t < n; ++t) {
            const auto row = whole_values.begin() + t * total + column;
            want.insert(want.end(), row, row + c.rows[p]);
          }
          EXPECT_EQ(floats(parts[p].out), want) << what << ", part " << p;
        }
      }
    }
  }
}

// rms_norm_linear_silu_mul: the norm inside the gated streamed kernel where the gate/up span
// takes it (full passes; a partial last pass with a partial chunk of k), the steps elsewhere
// (512 rows: not streamed; n = 17: cuBLASLt). Against the CPU; each row with the same bits at
// every n.
TEST(CudaResidualStream, RmsNormLinearSiluMulMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  for (const GatedCase& c : gated_cases()) {
    ASSERT_EQ(cuda::gated_linear_applies(c.intermediate, c.in, e.gpu.sm_count()), c.fused) << c.intermediate;
    const int64_t inter = c.intermediate;
    Bf16Values w = e.random(2 * inter * c.in, 1.0f / std::sqrt(static_cast<float>(c.in)));
    Bf16Values g = e.around(c.in, 1.0f, 0.1f), x = token_rows(e, 17, c.in);
    const Tensor span = e.bf16(w, {2 * inter, c.in}), x_gpu = e.bf16(x, {17, c.in}), g_gpu = e.bf16(g, {c.in});
    const Tensor gate_w = span.rows(0, inter), up_w = span.rows(inter, inter);
    std::vector<float> normed_ref(17 * c.in), gate_ref(17 * inter), up_ref(17 * inter), ref(17 * inter);
    std::vector<uint16_t> gate_bits(w.bits.begin(), w.bits.begin() + inter * c.in),
        up_bits(w.bits.begin() + inter * c.in, w.bits.end());
    e.cpu.rms_norm(host(x.values, {17, c.in}), host_bf16(g.bits, {c.in}), 1e-5f, host(normed_ref, {17, c.in}));
    e.cpu.linear(host(normed_ref, {17, c.in}), host_bf16(gate_bits, {inter, c.in}), nullptr,
                 host(gate_ref, {17, inter}));
    e.cpu.linear(host(normed_ref, {17, c.in}), host_bf16(up_bits, {inter, c.in}), nullptr, host(up_ref, {17, inter}));
    e.cpu.silu_mul(host(gate_ref, {17, inter}), host(up_ref, {17, inter}), host(ref, {17, inter}));
    e.cpu.synchronize();
    std::vector<float> at16;
    for (int64_t n : {16, 1, 5, 8, 9, 17}) {
      const std::string what = fmt::format("intermediate {}, in {}, n {}", inter, c.in, n);
      const Tensor normed = e.poisoned(DType::kBF16, {n, c.in});
      const Tensor gate = e.poisoned(DType::kBF16, {n, inter}), up = e.poisoned(DType::kBF16, {n, inter});
      const Tensor out = e.poisoned(DType::kBF16, {n, inter});
      e.gpu.rms_norm_linear_silu_mul(x_gpu.rows(0, n), g_gpu, 1e-5f, normed, gate_w, up_w, gate, up, out);
      EXPECT_EQ(all_poison(normed), c.fused && n <= 16) << what << ": the norm kernel ran or did not as expected";
      const std::vector<float> got = floats(out);
      EXPECT_LE(relative_error(got, slice(ref, 0, got.size())), kTolerance) << what;
      if (n == 16) at16 = got;
      else if (n < 16) EXPECT_EQ(got, slice(at16, 0, got.size())) << what << " vs n 16";
    }
  }
}

}  // namespace
}  // namespace fg
