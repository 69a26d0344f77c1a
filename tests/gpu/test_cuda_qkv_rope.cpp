// tests/gpu/test_cuda_qkv_rope.cpp — rms_norm_qkv_rope_cache_write on the CudaBackend: where the
// q/k/v span takes the direct kernel, the norm, the matmul, RoPE and the KV-cache write run as one
// launch (qkv_rope.h); where it streams, the norm kernel then one streamed launch. Either must
// leave q, k, v and both caches with the bits of the two steps it replaces (Backend's default:
// rms_norm_linear_group, then rope_and_cache_write), and match the CPU oracle running the same
// steps. Past 16 rows (cuBLASLt), given a span scratch, the norm, one GEMM of the whole span into
// it and RoPE from its columns: the bits of rms_norm, linear over the span's weight, then
// rope_and_cache_write of its columns; without a span, the steps. Shapes: head_dim 64 and 128,
// GQA ratios 1, 3, 4 and 8, with and without biases, n across the 8-row halves of the tensor-core
// tile and into two cuBLASLt buckets; some tokens padded (slot -1), whose slots must keep the
// poison.
//
// Tolerance: relative error <= 1e-2, as gpu_test_support.h explains; the fused launch against the
// steps is exact. The FP8 op (linear_fp8_qkv_rope_cache_write) is held to the bits of its steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "backend/cuda/streamed_linear.h"
#include "gpu/cuda_kernels_env.h"
#include "model/rope.h"

namespace fg {
namespace {

using namespace cuda_kernel_test;

struct QkvCase {
  int64_t in, heads, kv_heads, head_dim;
};

// Every output of one run: q, k, v and the two caches.
struct QkvRun {
  Tensor q, k, v, k_cache, v_cache, normed;
};

QkvRun poisoned_run(Env& e, int64_t n, const QkvCase& c, int64_t num_blocks, int64_t block_size) {
  const int64_t q_size = c.heads * c.head_dim, kv_size = c.kv_heads * c.head_dim;
  return {e.poisoned(DType::kBF16, {n, q_size}),
          e.poisoned(DType::kBF16, {n, kv_size}),
          e.poisoned(DType::kBF16, {n, kv_size}),
          e.poisoned(DType::kBF16, {num_blocks, block_size, c.kv_heads, c.head_dim}),
          e.poisoned(DType::kBF16, {num_blocks, block_size, c.kv_heads, c.head_dim}),
          e.poisoned(DType::kBF16, {n, c.in})};
}

TEST(CudaQkvRope, OneLaunchHasTheBitsOfTheStepsAndMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t block_size = 16, max_positions = 4096;
  // The direct kernel (the first four), then the streamed one: the 8B's span, and heads of 64
  // with GQA 3 (5120 rows: passes cut at every half head of 4 tile pairs).
  const std::vector<QkvCase> cases = {{2048, 32, 8, 64},   {1024, 8, 8, 128}, {1024, 16, 2, 128},
                                      {512, 8, 2, 64},     {4096, 32, 8, 128}, {4096, 48, 16, 64}};
  for (const QkvCase& c : cases) {
    const int64_t q_size = c.heads * c.head_dim, kv_size = c.kv_heads * c.head_dim, rows = q_size + 2 * kv_size;
    // The q, k and v weights (and biases) back to back, as the loader places them.
    Bf16Values span = e.random(rows * c.in, 1.0f / std::sqrt(static_cast<float>(c.in)));
    Bf16Values bias_span = e.random(rows, 0.5f);
    Bf16Values g = e.around(c.in, 1.0f, 0.1f);
    const Tensor span_gpu = e.bf16(span, {rows, c.in}), bias_gpu = e.bf16(bias_span, {rows}), g_gpu = e.bf16(g, {c.in});
    const std::vector<int64_t> part_rows = {q_size, kv_size, kv_size};
    std::vector<Tensor> part_w, part_b;
    for (int64_t p = 0, row0 = 0; p < 3; row0 += part_rows[p], ++p) {
      part_w.push_back(span_gpu.rows(row0, part_rows[p]));
      part_b.push_back(bias_gpu.rows(row0, part_rows[p]));
    }
    std::vector<float> table = rope_cos_sin_table(RopeConfig{}, c.head_dim, max_positions);
    const Tensor table_gpu = e.device(DType::kF32, table, {max_positions, c.head_dim});

    for (bool with_bias : {false, true}) {
      for (int64_t n : {1, 5, 8, 9, 16, 17, 40}) {
        const std::string what = fmt::format("in {}, heads {}/{}, hd {}, n {}{}", c.in, c.heads, c.kv_heads,
                                             c.head_dim, n, with_bias ? ", bias" : "");
        const int64_t num_blocks = 2 + (n + block_size - 1) / block_size, slots = num_blocks * block_size;
        Bf16Values x(e.random(n * c.in, 2.0f));
        // Every third token padded (-1).
        auto [positions, slot_mapping] = random_token_slots(e.rng, n, max_positions, slots, block_size, 1, 3);
        const Tensor x_gpu = e.bf16(x, {n, c.in});
        const Tensor positions_gpu = e.device(DType::kI32, positions, {n});
        const Tensor slots_gpu = e.device(DType::kI64, slot_mapping, {n});

        // The op (with or without a span scratch), Backend's default steps, and what the span path
        // stands for: the norm, one linear over the span's weight, then RoPE of its columns (copied
        // apart on the host) in place.
        enum class Mode { kOp, kOpWithoutSpan, kDefaultSteps, kSpanSteps };
        auto run = [&](Mode mode) {
          QkvRun r = poisoned_run(e, n, c, num_blocks, block_size);
          const std::vector<LinearPart> qkv = {{&part_w[0], with_bias ? &part_b[0] : nullptr, r.q},
                                               {&part_w[1], with_bias ? &part_b[1] : nullptr, r.k},
                                               {&part_w[2], with_bias ? &part_b[2] : nullptr, r.v}};
          const Tensor span_out = e.poisoned(DType::kBF16, {n, rows});
          const KvCacheLayer cache{r.k_cache, r.v_cache};
          if (mode == Mode::kSpanSteps) {
            e.gpu.rms_norm(x_gpu, g_gpu, 1e-5f, r.normed);
            e.gpu.linear(r.normed, span_gpu, with_bias ? &bias_gpu : nullptr, span_out);
            const auto bits = gpu_test::download<uint16_t>(span_out);
            std::vector<uint16_t> q_bits, k_bits, v_bits;
            for (int64_t t = 0; t < n; ++t) {
              const auto row = bits.begin() + t * rows;
              q_bits.insert(q_bits.end(), row, row + q_size);
              k_bits.insert(k_bits.end(), row + q_size, row + q_size + kv_size);
              v_bits.insert(v_bits.end(), row + q_size + kv_size, row + rows);
            }
            gpu_test::upload(r.q, q_bits);
            gpu_test::upload(r.k, k_bits);
            gpu_test::upload(r.v, v_bits);
            e.gpu.rope_and_cache_write(r.q, r.k, r.v, positions_gpu, slots_gpu, table_gpu, cache);
          } else if (mode == Mode::kDefaultSteps) {
            e.gpu.Backend::rms_norm_qkv_rope_cache_write(x_gpu, g_gpu, 1e-5f, r.normed, Tensor(), qkv, positions_gpu,
                                                         slots_gpu, table_gpu, cache);
          } else {
            EXPECT_EQ(e.gpu.fuses_qkv_rope(n, qkv), n <= 16) << what;
            e.gpu.rms_norm_qkv_rope_cache_write(x_gpu, g_gpu, 1e-5f, r.normed,
                                                mode == Mode::kOp ? span_out : Tensor(), qkv, positions_gpu, slots_gpu,
                                                table_gpu, cache);
          }
          return r;
        };
        auto expect_same_bits = [&](const QkvRun& one, const QkvRun& steps, const std::string& how) {
          for (const auto& [got, want, name] : {std::tuple{one.q, steps.q, "q"}, {one.k, steps.k, "k"},
                                                {one.v, steps.v, "v"}, {one.k_cache, steps.k_cache, "k cache"},
                                                {one.v_cache, steps.v_cache, "v cache"}})
          {
            const auto a = gpu_test::download<uint16_t>(got), b = gpu_test::download<uint16_t>(want);
            int64_t differ = 0;
            for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
            EXPECT_EQ(differ, 0) << what << how << ": elements of " << name << " whose bits differ from the steps'";
          }
        };
        const QkvRun one = run(Mode::kOp);
        expect_same_bits(one, run(n > 16 ? Mode::kSpanSteps : Mode::kDefaultSteps), "");
        if (n > 16) expect_same_bits(run(Mode::kOpWithoutSpan), run(Mode::kDefaultSteps), ", without a span");

        // Only the slots of unpadded tokens were written.
        const auto k_cache = gpu_test::download<uint16_t>(one.k_cache);
        const int64_t cached =
            std::count_if(slot_mapping.begin(), slot_mapping.end(), [](int64_t s) { return s >= 0; });
        const int64_t written =
            std::count_if(k_cache.begin(), k_cache.end(), [](uint16_t b) { return b != kPoisonBf16; });
        EXPECT_EQ(written, cached * kv_size) << what;

        // The CPU oracle: the norm, the three linears, RoPE and the cache write.
        std::vector<float> normed(n * c.in), q(n * q_size), k(n * kv_size), v(n * kv_size);
        std::vector<float> cpu_k_cache(slots * kv_size, 0.0f), cpu_v_cache(slots * kv_size, 0.0f);
        e.cpu.rms_norm(host(x.values, {n, c.in}), host_bf16(g.bits, {c.in}), 1e-5f, host(normed, {n, c.in}));
        std::vector<float>* outs[3] = {&q, &k, &v};
        for (int64_t p = 0, row0 = 0; p < 3; row0 += part_rows[p], ++p) {
          std::vector<uint16_t> w_bits(span.bits.begin() + row0 * c.in,
                                       span.bits.begin() + (row0 + part_rows[p]) * c.in);
          std::vector<uint16_t> b_bits(bias_span.bits.begin() + row0, bias_span.bits.begin() + row0 + part_rows[p]);
          const Tensor b = host_bf16(b_bits, {part_rows[p]});
          e.cpu.linear(host(normed, {n, c.in}), host_bf16(w_bits, {part_rows[p], c.in}), with_bias ? &b : nullptr,
                       host(*outs[p], {n, part_rows[p]}));
        }
        e.cpu.rope_and_cache_write(host(q, {n, q_size}), host(k, {n, kv_size}), host(v, {n, kv_size}),
                                   Tensor(positions.data(), DType::kI32, {n}),
                                   Tensor(slot_mapping.data(), DType::kI64, {n}),
                                   host(table, {max_positions, c.head_dim}),
                                   {host(cpu_k_cache, {num_blocks, block_size, c.kv_heads, c.head_dim}),
                                    host(cpu_v_cache, {num_blocks, block_size, c.kv_heads, c.head_dim})});
        e.cpu.synchronize();
        EXPECT_LE(relative_error(floats(one.q), q), kTolerance) << what << ": q";
        EXPECT_LE(relative_error(floats(one.k), k), kTolerance) << what << ": k";
        EXPECT_LE(relative_error(floats(one.v), v), kTolerance) << what << ": v";
        const auto v_cache = gpu_test::download<uint16_t>(one.v_cache);
        std::vector<float> got_cache, want_cache;
        for (int64_t i = 0; i < n; ++i) {
          if (slot_mapping[i] < 0) continue;
          for (int64_t j = 0; j < kv_size; ++j) {
            const int64_t at = slot_mapping[i] * kv_size + j;
            got_cache.push_back(bf16_to_float(k_cache[at]));
            want_cache.push_back(cpu_k_cache[at]);
            got_cache.push_back(bf16_to_float(v_cache[at]));
            want_cache.push_back(cpu_v_cache[at]);
          }
        }
        EXPECT_LE(relative_error(got_cache, want_cache), kTolerance) << what << ": caches";
      }
    }
  }
}

// linear_fp8_qkv_rope_cache_write: where the FP8 q/k/v span streams (the 70B's, and heads of 64
// with GQA 4 over 12288 rows) and the rows are decode rows, one streamed launch over e4m3 weights and rows, which must
// leave q, k, v and both caches with the bits of Backend's default steps (linear_fp8_group, then
// rope_and_cache_write); past 16 rows the op is those steps. The weights are quantized per output
// channel and the rows per token on the device, as the engine does; with and without biases; every
// third token padded.
TEST(CudaQkvRope, Fp8OneLaunchHasTheBitsOfTheSteps) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t block_size = 16, max_positions = 4096;
  for (const QkvCase& c : {QkvCase{8192, 64, 8, 128}, QkvCase{2048, 128, 32, 64}}) {
    const int64_t q_size = c.heads * c.head_dim, kv_size = c.kv_heads * c.head_dim, rows = q_size + 2 * kv_size;
    ASSERT_TRUE(cuda::qkv_rope_streamed_applies(rows, c.in, c.head_dim, e.gpu.sm_count(), 1));
    Bf16Values span = e.random(rows * c.in, 1.0f / std::sqrt(static_cast<float>(c.in)));
    Bf16Values bias_span = e.random(rows, 0.5f);
    const Tensor span_gpu = e.bf16(span, {rows, c.in}), bias_gpu = e.bf16(bias_span, {rows});
    const Tensor span8 = e.poisoned(DType::kF8E4M3, {rows, c.in}), scales = e.poisoned(DType::kF32, {rows});
    e.gpu.quantize_weight_fp8(span_gpu, span8, scales);
    const std::vector<int64_t> part_rows = {q_size, kv_size, kv_size};
    std::vector<Tensor> part_w, part_s, part_b;
    for (int64_t p = 0, row0 = 0; p < 3; row0 += part_rows[p], ++p) {
      part_w.push_back(span8.rows(row0, part_rows[p]));
      part_s.push_back(scales.rows(row0, part_rows[p]));
      part_b.push_back(bias_gpu.rows(row0, part_rows[p]));
    }
    std::vector<float> table = rope_cos_sin_table(RopeConfig{}, c.head_dim, max_positions);
    const Tensor table_gpu = e.device(DType::kF32, table, {max_positions, c.head_dim});
    for (bool with_bias : {false, true}) {
      for (int64_t n : {1, 5, 8, 9, 16, 17}) {
        const std::string what = fmt::format("FP8, in {}, heads {}/{}, hd {}, n {}{}", c.in, c.heads, c.kv_heads,
                                             c.head_dim, n, with_bias ? ", bias" : "");
        const int64_t num_blocks = 2 + (n + block_size - 1) / block_size, slots = num_blocks * block_size;
        auto [positions, slot_mapping] = random_token_slots(e.rng, n, max_positions, slots, block_size, 1, 3);
        const Tensor positions_gpu = e.device(DType::kI32, positions, {n});
        const Tensor slots_gpu = e.device(DType::kI64, slot_mapping, {n});
        const Tensor x_gpu = e.bf16(e.random(n * c.in, 2.0f), {n, c.in});
        const Fp8Rows x8{e.poisoned(DType::kF8E4M3, {n, c.in}), e.poisoned(DType::kF32, {n})};
        e.gpu.quantize_fp8(x_gpu, 0.0f, x8);
        auto run = [&](bool op) {
          QkvRun r = poisoned_run(e, n, c, num_blocks, block_size);
          const std::vector<Fp8LinearPart> qkv = {{&part_w[0], &part_s[0], with_bias ? &part_b[0] : nullptr, r.q},
                                                  {&part_w[1], &part_s[1], with_bias ? &part_b[1] : nullptr, r.k},
                                                  {&part_w[2], &part_s[2], with_bias ? &part_b[2] : nullptr, r.v}};
          const KvCacheLayer cache{r.k_cache, r.v_cache};
          if (op) e.gpu.linear_fp8_qkv_rope_cache_write(x8, qkv, positions_gpu, slots_gpu, table_gpu, cache);
          else e.gpu.Backend::linear_fp8_qkv_rope_cache_write(x8, qkv, positions_gpu, slots_gpu, table_gpu, cache);
          return r;
        };
        const QkvRun one = run(true), steps = run(false);
        for (const auto& [got, want, name] : {std::tuple{one.q, steps.q, "q"}, {one.k, steps.k, "k"},
                                              {one.v, steps.v, "v"}, {one.k_cache, steps.k_cache, "k cache"},
                                              {one.v_cache, steps.v_cache, "v cache"}}) {
          const auto a = gpu_test::download<uint16_t>(got), b = gpu_test::download<uint16_t>(want);
          int64_t differ = 0, unwritten = 0;
          for (size_t i = 0; i < a.size(); ++i) {
            differ += a[i] != b[i];
            unwritten += a[i] == kPoisonBf16;
          }
          EXPECT_EQ(differ, 0) << what << ": elements of " << name << " whose bits differ from the steps'";
          const bool cache = std::string(name).ends_with("cache");  // padded tokens' slots keep the poison
          if (!cache) EXPECT_EQ(unwritten, 0) << what << ": elements of " << name << " left unwritten";
        }
        const auto k_cache = gpu_test::download<uint16_t>(one.k_cache);
        const int64_t cached = std::count_if(slot_mapping.begin(), slot_mapping.end(), [](int64_t s) { return s >= 0; });
        const int64_t written =
            std::count_if(k_cache.begin(), k_cache.end(), [](uint16_t b) { return b != kPoisonBf16; });
        EXPECT_EQ(written, cached * kv_size) << what;
      }
    }
  }
}

}  // namespace
}  // namespace fg
