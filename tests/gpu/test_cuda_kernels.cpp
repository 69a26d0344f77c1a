// tests/gpu/test_cuda_kernels.cpp — the CudaBackend ops other than the linears (those are in
// test_cuda_linear.cpp) against the CpuBackend (the fp32 oracle) on fresh random
// bf16-representable inputs over swept shapes, with outputs poisoned before every run: gathers,
// norms, SiLU-and-multiply, RoPE with the cache write, the reference GPU attention and sampling.
//
// Tolerance: relative error <= 1e-2, as gpu_test_support.h explains. Pure data movement (the
// embedding, gather_rows, the KV-cache copies) must be exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "attention/cuda/reference_attention.h"
#include "gpu/cuda_kernels_env.h"
#include "model/rope.h"
#include "runner/step_builder.h"
#include "sampling/sampling_params.h"
#include "test_support.h"

namespace fg {
namespace {

using namespace cuda_kernel_test;

TEST(CudaKernelsRows, EmbeddingIsAnExactGather) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t vocab = 1000;
  for (int64_t hidden : {64, 136, 2048, 4096}) {
    Bf16Values table = e.random(vocab * hidden);
    const Tensor table_gpu = e.bf16(table, {vocab, hidden});
    for (int64_t n : {1, 7, 300}) {
      std::vector<int32_t> ids(n);
      for (auto& id : ids) id = static_cast<int32_t>(e.rng() % vocab);
      const Tensor out = e.poisoned(DType::kBF16, {n, hidden});
      e.gpu.embedding(e.device(DType::kI32, ids, {n}), table_gpu, out);
      std::vector<float> ref(n * hidden);
      e.cpu.embedding(Tensor(ids.data(), DType::kI32, {n}), host_bf16(table.bits, {vocab, hidden}),
                      host(ref, {n, hidden}));
      EXPECT_EQ(floats(out), ref) << "hidden " << hidden << " n " << n;
    }
  }
}

TEST(CudaKernelsRows, GatherRowsIsAnExactGather) {
  FG_REQUIRE_GPU();
  Env e;
  for (int64_t hidden : {64, 2048}) {
    for (int64_t n : {1, 17, 300}) {
      Bf16Values x = e.random(n * hidden);
      const int64_t m = std::max<int64_t>(1, n / 3);
      std::vector<int32_t> idx(m);
      for (auto& i : idx) i = static_cast<int32_t>(e.rng() % n);
      const Tensor out = e.poisoned(DType::kBF16, {m, hidden});
      e.gpu.gather_rows(e.bf16(x, {n, hidden}), e.device(DType::kI32, idx, {m}), out);
      std::vector<float> ref(m * hidden);
      e.cpu.gather_rows(host(x.values, {n, hidden}), Tensor(idx.data(), DType::kI32, {m}), host(ref, {m, hidden}));
      EXPECT_EQ(floats(out), ref) << "hidden " << hidden << " n " << n;
    }
  }
}

TEST(CudaKernelsNorm, RmsNormMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  for (int64_t hidden : {64, 96, 520, 2048, 4096, 8192}) {
    Bf16Values w = e.around(hidden, 1.0f, 0.1f);
    for (int64_t n : {1, 3, 17, 300}) {
      Bf16Values x = e.random(n * hidden, 3.0f);
      const Tensor out = e.poisoned(DType::kBF16, {n, hidden});
      e.gpu.rms_norm(e.bf16(x, {n, hidden}), e.bf16(w, {hidden}), 1e-5f, out);
      std::vector<float> ref(n * hidden);
      e.cpu.rms_norm(host(x.values, {n, hidden}), host_bf16(w.bits, {hidden}), 1e-5f, host(ref, {n, hidden}));
      EXPECT_LE(relative_error(floats(out), ref), kTolerance) << "hidden " << hidden << " n " << n;
    }
  }
}

TEST(CudaKernelsNorm, AddRmsNormMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  for (int64_t hidden : {64, 96, 2048, 4096}) {
    Bf16Values w = e.around(hidden, 1.0f, 0.1f);
    for (int64_t n : {1, 5, 130, 300}) {
      Bf16Values residual = e.random(n * hidden, 2.0f), x = e.random(n * hidden);
      const Tensor residual_gpu = e.bf16(residual, {n, hidden});
      const Tensor out = e.poisoned(DType::kBF16, {n, hidden});
      e.gpu.add_rms_norm(residual_gpu, e.bf16(x, {n, hidden}), e.bf16(w, {hidden}), 1e-6f, out);
      std::vector<float> ref(n * hidden);
      e.cpu.add_rms_norm(host(residual.values, {n, hidden}), host(x.values, {n, hidden}),
                         host_bf16(w.bits, {hidden}), 1e-6f, host(ref, {n, hidden}));
      EXPECT_LE(relative_error(floats(residual_gpu), residual.values), kTolerance) << "residual, hidden " << hidden;
      EXPECT_LE(relative_error(floats(out), ref), kTolerance) << "hidden " << hidden << " n " << n;
    }
  }
}

TEST(CudaKernelsNorm, HeadRmsNormMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  for (int64_t head_dim : {16, 32, 64, 128}) {
    Bf16Values w = e.around(head_dim, 1.0f, 0.2f);
    for (int64_t heads : {1, 4, 32}) {
      for (int64_t n : {1, 17, 300}) {
        Bf16Values x = e.random(n * heads * head_dim, 2.0f);
        const Tensor x_gpu = e.bf16(x, {n, heads * head_dim});
        e.gpu.head_rms_norm(x_gpu, e.bf16(w, {head_dim}), 1e-6f);
        e.cpu.head_rms_norm(host(x.values, {n, heads * head_dim}), host_bf16(w.bits, {head_dim}), 1e-6f);
        EXPECT_LE(relative_error(floats(x_gpu), x.values), kTolerance)
            << "head_dim " << head_dim << " heads " << heads << " n " << n;
      }
    }
  }
}

TEST(CudaKernelsActivation, SiluMulMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  for (int64_t width : {128, 344, 8192}) {
    for (int64_t n : {1, 5, 300}) {
      Bf16Values gate = e.random(n * width, 3.0f), up = e.random(n * width);
      const Tensor out = e.poisoned(DType::kBF16, {n, width});
      e.gpu.silu_mul(e.bf16(gate, {n, width}), e.bf16(up, {n, width}), out);
      std::vector<float> ref(n * width);
      e.cpu.silu_mul(host(gate.values, {n, width}), host(up.values, {n, width}), host(ref, {n, width}));
      EXPECT_LE(relative_error(floats(out), ref), kTolerance) << "width " << width << " n " << n;
    }
  }
}

// RoPE on q and k, and the cache write: padded tokens (slot -1) must leave the cache untouched.
TEST(CudaKernelsRope, RopeAndCacheWriteMatchCpu) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t block_size = 16, max_positions = 4096;
  for (int64_t head_dim : {16, 64, 128}) {
    std::vector<float> table = rope_cos_sin_table(RopeConfig{}, head_dim, max_positions);
    const Tensor table_gpu = e.device(DType::kF32, table, {max_positions, head_dim});
    for (auto [nh, nkv] : {std::pair<int64_t, int64_t>{8, 8}, {16, 4}, {32, 4}}) {
      for (int64_t n : {1, 7, 130, 300}) {
        const int64_t num_blocks = 1 + (n + block_size - 1) / block_size + 2, slots = num_blocks * block_size;
        const int64_t q_size = nh * head_dim, kv_size = nkv * head_dim;
        Bf16Values q = e.random(n * q_size), k = e.random(n * kv_size), v = e.random(n * kv_size);
        // Every fifth token padded (-1).
        auto [positions, slot_mapping] = random_token_slots(e.rng, n, max_positions, slots, block_size, 2, 5);

        const Tensor q_gpu = e.bf16(q, {n, q_size}), k_gpu = e.bf16(k, {n, kv_size}), v_gpu = e.bf16(v, {n, kv_size});
        KvCacheLayer cache{e.poisoned(DType::kBF16, {num_blocks, block_size, nkv, head_dim}),
                           e.poisoned(DType::kBF16, {num_blocks, block_size, nkv, head_dim})};
        e.gpu.rope_and_cache_write(q_gpu, k_gpu, v_gpu, e.device(DType::kI32, positions, {n}),
                                   e.device(DType::kI64, slot_mapping, {n}), table_gpu, cache);

        std::vector<float> cpu_k_cache(slots * kv_size), cpu_v_cache(slots * kv_size);
        e.cpu.rope_and_cache_write(host(q.values, {n, q_size}), host(k.values, {n, kv_size}),
                                   host(v.values, {n, kv_size}), Tensor(positions.data(), DType::kI32, {n}),
                                   Tensor(slot_mapping.data(), DType::kI64, {n}),
                                   host(table, {max_positions, head_dim}),
                                   {host(cpu_k_cache, {num_blocks, block_size, nkv, head_dim}),
                                    host(cpu_v_cache, {num_blocks, block_size, nkv, head_dim})});
        const std::string where = "head_dim " + std::to_string(head_dim) + " heads " + std::to_string(nh) + "/" +
                                  std::to_string(nkv) + " n " + std::to_string(n);
        EXPECT_LE(relative_error(floats(q_gpu), q.values), kTolerance) << "q, " << where;
        EXPECT_LE(relative_error(floats(k_gpu), k.values), kTolerance) << "k, " << where;

        // Written slots hold exactly the rotated k and the v of their token; all others the poison.
        const auto k_rot = gpu_test::download<uint16_t>(k_gpu), v_bits = v.bits;
        const auto k_cache = gpu_test::download<uint16_t>(cache.k), v_cache = gpu_test::download<uint16_t>(cache.v);
        std::vector<int64_t> owner(slots, -1);
        for (int64_t i = 0; i < n; ++i)
          if (slot_mapping[i] >= 0) owner[slot_mapping[i]] = i;
        int64_t bad_written = 0, bad_untouched = 0;
        for (int64_t s = 0; s < slots; ++s) {
          for (int64_t j = 0; j < kv_size; ++j) {
            const uint16_t kc = k_cache[s * kv_size + j], vc = v_cache[s * kv_size + j];
            if (owner[s] < 0) {
              bad_untouched += kc != kPoisonBf16 || vc != kPoisonBf16;
            } else {
              bad_written += kc != k_rot[owner[s] * kv_size + j] || vc != v_bits[owner[s] * kv_size + j];
            }
          }
        }
        EXPECT_EQ(bad_written, 0) << where;
        EXPECT_EQ(bad_untouched, 0) << "elements of unwritten slots changed, " << where;
        const CacheRows written = written_cache_rows(k_cache, cpu_k_cache, slot_mapping, kv_size);
        EXPECT_LE(relative_error(written.gpu, written.cpu), kTolerance) << "k cache, " << where;
      }
    }
  }
}

// qk_norm_rope_cache_write (the q/k-norm models): one launch with the bits of Backend's default
// steps (head_rms_norm of q, of k, then rope_and_cache_write), and the CPU running those steps.
// head_dim 16 to 256 (2 to 32 lanes per head), GQA 1 to 8, n up to 16 (the one launch's rows;
// past them the op runs the steps themselves) across warp and block boundaries; every third token
// padded (slot -1), whose slots keep the poison.
TEST(CudaKernelsRope, QkNormRopeHasTheBitsOfTheSteps) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t block_size = 16, max_positions = 4096;
  for (int64_t head_dim : {16, 64, 128, 256}) {
    std::vector<float> table = rope_cos_sin_table(RopeConfig{}, head_dim, max_positions);
    const Tensor table_gpu = e.device(DType::kF32, table, {max_positions, head_dim});
    Bf16Values q_norm = e.around(head_dim, 1.0f, 0.2f), k_norm = e.around(head_dim, 1.0f, 0.2f);
    const Tensor q_norm_gpu = e.bf16(q_norm, {head_dim}), k_norm_gpu = e.bf16(k_norm, {head_dim});
    for (auto [nh, nkv] : {std::pair<int64_t, int64_t>{8, 8}, {16, 8}, {32, 4}}) {
      for (int64_t n : {1, 7, 16}) {
        const std::string where = fmt::format("head_dim {} heads {}/{} n {}", head_dim, nh, nkv, n);
        const int64_t num_blocks = 1 + (n + block_size - 1) / block_size + 2, slots = num_blocks * block_size;
        const int64_t q_size = nh * head_dim, kv_size = nkv * head_dim;
        Bf16Values q = e.random(n * q_size, 3.0f), k = e.random(n * kv_size, 3.0f), v = e.random(n * kv_size);
        auto [positions, slot_mapping] = random_token_slots(e.rng, n, max_positions, slots, block_size, 1, 3);
        const Tensor positions_gpu = e.device(DType::kI32, positions, {n});
        const Tensor slots_gpu = e.device(DType::kI64, slot_mapping, {n});
        struct Run {
          Tensor q, k, v;
          KvCacheLayer cache;
        };
        auto run = [&](bool one_launch) {
          Run r{e.bf16(q, {n, q_size}), e.bf16(k, {n, kv_size}), e.bf16(v, {n, kv_size}),
                {e.poisoned(DType::kBF16, {num_blocks, block_size, nkv, head_dim}),
                 e.poisoned(DType::kBF16, {num_blocks, block_size, nkv, head_dim})}};
          if (one_launch)
            e.gpu.qk_norm_rope_cache_write(r.q, r.k, r.v, q_norm_gpu, k_norm_gpu, 1e-6f, positions_gpu, slots_gpu,
                                           table_gpu, r.cache);
          else
            e.gpu.Backend::qk_norm_rope_cache_write(r.q, r.k, r.v, q_norm_gpu, k_norm_gpu, 1e-6f, positions_gpu,
                                                    slots_gpu, table_gpu, r.cache);
          return r;
        };
        const Run one = run(true), steps = run(false);
        for (const auto& [got, want, name] : {std::tuple{one.q, steps.q, "q"}, {one.k, steps.k, "k"},
                                              {one.v, steps.v, "v"}, {one.cache.k, steps.cache.k, "k cache"},
                                              {one.cache.v, steps.cache.v, "v cache"}})
          EXPECT_EQ(gpu_test::download<uint16_t>(got), gpu_test::download<uint16_t>(want)) << where << ": " << name;

        std::vector<float> cpu_q = q.values, cpu_k = k.values;
        std::vector<float> cpu_k_cache(slots * kv_size), cpu_v_cache(slots * kv_size);
        e.cpu.qk_norm_rope_cache_write(host(cpu_q, {n, q_size}), host(cpu_k, {n, kv_size}),
                                       host(v.values, {n, kv_size}), host_bf16(q_norm.bits, {head_dim}),
                                       host_bf16(k_norm.bits, {head_dim}), 1e-6f,
                                       Tensor(positions.data(), DType::kI32, {n}),
                                       Tensor(slot_mapping.data(), DType::kI64, {n}),
                                       host(table, {max_positions, head_dim}),
                                       {host(cpu_k_cache, {num_blocks, block_size, nkv, head_dim}),
                                        host(cpu_v_cache, {num_blocks, block_size, nkv, head_dim})});
        e.cpu.synchronize();
        EXPECT_LE(relative_error(floats(one.q), cpu_q), kTolerance) << "q, " << where;
        EXPECT_LE(relative_error(floats(one.k), cpu_k), kTolerance) << "k, " << where;
        const auto k_cache = gpu_test::download<uint16_t>(one.cache.k);
        const CacheRows cached = written_cache_rows(k_cache, cpu_k_cache, slot_mapping, kv_size);
        const int64_t written =
            std::count_if(k_cache.begin(), k_cache.end(), [](uint16_t b) { return b != kPoisonBf16; });
        EXPECT_EQ(written, static_cast<int64_t>(cached.gpu.size())) << "k cache elements written, " << where;
        EXPECT_LE(relative_error(cached.gpu, cached.cpu), kTolerance) << "k cache, " << where;
      }
    }
  }
}

// The reference GPU attention against the CPU's, over a batch that mixes a prefill, a chunked
// prefill, decodes, padded requests (zero query tokens) and padded tokens (owned by no request,
// so never written: their rows must keep the poison).
TEST(CudaKernelsAttention, ReferenceAttentionMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t block_size = 16;
  for (int64_t head_dim : {64, 128}) {
    for (auto [nh, nkv] : {std::pair<int64_t, int64_t>{8, 8}, {8, 2}, {16, 2}}) {
      // Requests: (new tokens, tokens already cached).
      const std::vector<std::pair<int64_t, int64_t>> shapes = {{37, 0}, {1, 99}, {20, 50}, {1, 0}, {1, 16}};
      int64_t blocks_used = 1, max_blocks = 0, real_tokens = 0;
      std::vector<std::vector<int32_t>> token_ids, block_ids;
      for (auto [tokens, cached] : shapes) {
        token_ids.emplace_back(tokens, 1);
        const int64_t blocks = (tokens + cached + block_size - 1) / block_size;
        block_ids.emplace_back();
        for (int64_t b = 0; b < blocks; ++b) block_ids.back().push_back(static_cast<int32_t>(blocks_used + 2 * b));
        blocks_used += 2 * blocks;  // interleaved with unused blocks: block ids are not positions
        max_blocks = std::max(max_blocks, blocks);
        real_tokens += tokens;
      }
      std::vector<ScheduledRequest> requests;
      for (size_t r = 0; r < shapes.size(); ++r)
        requests.push_back(test::reference_request(token_ids[r], shapes[r].second, block_ids[r], false));
      // Two padded requests and three padded tokens, filled as DESIGN.md's default contract says.
      const int64_t n = real_tokens + 3, reqs = static_cast<int64_t>(shapes.size()) + 2, num_blocks = blocks_used;
      const StepLayout layout = StepLayout::make(n, reqs, max_blocks);
      std::vector<int64_t> staging(layout.total_bytes / 8 + 1);
      stage_step(requests, layout, PaddingContract{}, block_size, staging.data());
      const auto staged = [&](StepField f) {
        const int32_t* values = layout.at<int32_t>(staging.data(), f);
        return std::vector<int32_t>(values, values + layout.numel(f));
      };
      struct {
        std::vector<int32_t> query_start_loc, seq_lens, block_table;
      } s{staged(StepField::kQueryStartLoc), staged(StepField::kSeqLens), staged(StepField::kBlockTable)};
      const int64_t cache_elems = num_blocks * block_size * nkv * head_dim;
      Bf16Values q = e.random(n * nh * head_dim), kc = e.random(cache_elems), vc = e.random(cache_elems);

      const Tensor out = e.poisoned(DType::kBF16, {n, nh * head_dim});
      AttentionLimits limits{n, reqs, 200, nh, nkv, head_dim, block_size};
      e.gpu.set_attention(make_reference_attention(limits));
      AttentionMetadata meta{e.device(DType::kI32, s.query_start_loc, {reqs + 1}),
                             e.device(DType::kI32, s.seq_lens, {reqs}),
                             e.device(DType::kI32, s.block_table, {reqs, max_blocks})};
      e.gpu.attention(e.bf16(q, {n, nh * head_dim}),
                      {e.bf16(kc, {num_blocks, block_size, nkv, head_dim}),
                       e.bf16(vc, {num_blocks, block_size, nkv, head_dim})},
                      meta, 0.125f, out);

      std::vector<float> ref(n * nh * head_dim, 0.0f);
      e.cpu.attention(host(q.values, {n, nh * head_dim}),
                      {host(kc.values, {num_blocks, block_size, nkv, head_dim}),
                       host(vc.values, {num_blocks, block_size, nkv, head_dim})},
                      {Tensor(s.query_start_loc.data(), DType::kI32, {reqs + 1}),
                       Tensor(s.seq_lens.data(), DType::kI32, {reqs}),
                       Tensor(s.block_table.data(), DType::kI32, {reqs, max_blocks})},
                      0.125f, host(ref, {n, nh * head_dim}));
      const std::vector<float> got = floats(out);
      const size_t real = static_cast<size_t>(real_tokens * nh * head_dim);
      EXPECT_LE(relative_error(slice(got, 0, real), slice(ref, 0, real)), kTolerance)
          << "head_dim " << head_dim << " heads " << nh << "/" << nkv;
      const auto bits = gpu_test::download<uint16_t>(out);
      EXPECT_TRUE(std::all_of(bits.begin() + real, bits.end(), [](uint16_t b) { return b == kPoisonBf16; }))
          << "padded tokens were written, head_dim " << head_dim;
    }
  }
}

// Through the Backend interface (the sampler itself has its own tests in test_sampling_gpu.cpp):
// greedy and sampled rows, as the CPU reference picks them, bit for bit.
TEST(CudaKernelsSample, SampleMatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  for (int64_t vocab : {320, 128256}) {
    const int64_t m = 6;
    std::vector<float> logits = e.random(m * vocab, 4.0f).values;
    logits[2 * vocab + 7] = logits[2 * vocab + 5] = 100.0f;  // a tie: greedy takes the lower id
    HostSamplingBuffers params(m);
    SamplingParams sampled;
    sampled.temperature = 0.8f;
    sampled.top_k = 50;
    sampled.top_p = 0.9f;
    sampled.seed = 7;
    sampled.step = 3;
    params.set(3, sampled);
    sampled.seed = 8;
    params.set(5, sampled);
    const SamplingTensors& h = params.tensors();
    auto to_device = [&](const Tensor& t) {
      const Tensor d = e.alloc(t.dtype, {m});
      FG_CUDA_CHECK(cudaMemcpy(d.data, t.data, d.nbytes(), cudaMemcpyHostToDevice));
      return d;
    };
    const SamplingTensors d{to_device(h.temperature), to_device(h.top_k), to_device(h.top_p),
                            to_device(h.min_p),       to_device(h.seed),  to_device(h.step)};
    const Tensor ids = e.poisoned(DType::kI32, {m});
    e.gpu.sample(e.device(DType::kF32, logits, {m, vocab}), d, ids);
    std::vector<int32_t> ref(m);
    e.cpu.sample(host(logits, {m, vocab}), h, Tensor(ref.data(), DType::kI32, {m}));
    EXPECT_EQ(gpu_test::download<int32_t>(ids), ref) << "vocab " << vocab;
    EXPECT_EQ(ref[2], 5);
  }
}

}  // namespace
}  // namespace fg
