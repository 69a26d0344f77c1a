// tests/gpu/test_cuda_kernels.cpp — every CudaBackend op against the CpuBackend (the fp32 oracle)
// on fresh random bf16-representable inputs over swept shapes, with outputs poisoned before every
// run; the reference GPU attention; greedy sampling; and the graph == eager rule of the linear.
//
// Tolerance: relative error <= 1e-2, as gpu_test_support.h explains. Pure data movement (the
// embedding, gather_rows, the KV-cache copies) must be exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "attention/cuda/reference_attention.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/small_n_linear.h"
#include "backend/cuda/streamed_linear.h"
#include "gpu/gpu_test_support.h"
#include "model/rope.h"
#include "runner/host_step.h"
#include "sampling/sampling_params.h"

namespace fg {
namespace {

using gpu_test::Bf16Values;
using gpu_test::relative_error;

constexpr double kTolerance = 1e-2;
constexpr uint16_t kPoisonBf16 = 0xFFFF;  // what gpu_test::poison leaves in a bf16 element

// Both backends, fresh random numbers per test, and the device memory the test allocated.
struct Env {
  CudaBackend gpu;
  CpuBackend cpu;
  std::mt19937 rng{12345};
  std::vector<std::shared_ptr<void>> keep;

  Tensor alloc(DType dtype, std::initializer_list<int64_t> dims) {
    Allocation a = gpu.allocate(dtype, dims);
    keep.push_back(a.memory);
    return a.tensor;
  }
  // A device BF16 tensor holding v, which must have dims' element count.
  Tensor bf16(const Bf16Values& v, std::initializer_list<int64_t> dims) {
    Tensor t = alloc(DType::kBF16, dims);
    gpu_test::upload(t, v.bits);
    return t;
  }
  template <typename T>
  Tensor device(DType dtype, const std::vector<T>& v, std::initializer_list<int64_t> dims) {
    Tensor t = alloc(dtype, dims);
    gpu_test::upload(t, v);
    return t;
  }
  Tensor poisoned(DType dtype, std::initializer_list<int64_t> dims) {
    Tensor t = alloc(dtype, dims);
    gpu_test::poison(t);
    return t;
  }
  Bf16Values random(size_t n, float scale = 1.0f) { return gpu_test::random_bf16(n, rng, scale); }
  // Values near `center` (norm weights), still bf16-representable.
  Bf16Values around(size_t n, float center, float scale) {
    Bf16Values v = random(n, scale);
    for (size_t i = 0; i < n; ++i) {
      v.bits[i] = float_to_bf16(center + v.values[i]);
      v.values[i] = bf16_to_float(v.bits[i]);
    }
    return v;
  }
};

// A host tensor over `values` (the CPU oracle's view of the same numbers).
Tensor host(std::vector<float>& values, std::initializer_list<int64_t> dims) {
  return Tensor(values.data(), DType::kF32, dims);
}
Tensor host_bf16(std::vector<uint16_t>& bits, std::initializer_list<int64_t> dims) {
  return Tensor(bits.data(), DType::kBF16, dims);
}

// A device tensor's values as fp32 (BF16 or F32).
std::vector<float> floats(const Tensor& t) {
  if (t.dtype == DType::kF32) return gpu_test::download<float>(t);
  return gpu_test::bf16_bits_to_float(gpu_test::download<uint16_t>(t));
}

std::vector<float> slice(const std::vector<float>& v, size_t begin, size_t count) {
  return std::vector<float>(v.begin() + begin, v.begin() + begin + count);
}

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
        std::vector<int32_t> positions(n);
        for (auto& p : positions) p = static_cast<int32_t>(e.rng() % max_positions);
        // Distinct slots outside the null block, in random order; every fifth token padded (-1).
        std::vector<int64_t> free_slots(slots - block_size);
        std::iota(free_slots.begin(), free_slots.end(), block_size);
        std::shuffle(free_slots.begin(), free_slots.end(), e.rng);
        std::vector<int64_t> slot_mapping(free_slots.begin(), free_slots.begin() + n);
        for (int64_t i = 2; i < n; i += 5) slot_mapping[i] = -1;

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
        std::vector<float> written_gpu, written_cpu;
        for (int64_t i = 0; i < n; ++i) {
          if (slot_mapping[i] < 0) continue;
          for (int64_t j = 0; j < kv_size; ++j) {
            written_gpu.push_back(bf16_to_float(k_cache[slot_mapping[i] * kv_size + j]));
            written_cpu.push_back(cpu_k_cache[slot_mapping[i] * kv_size + j]);
          }
        }
        EXPECT_LE(relative_error(written_gpu, written_cpu), kTolerance) << "k cache, " << where;
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
      int64_t blocks_used = 1, max_blocks = 0;
      std::vector<RequestChunk> chunks;
      for (auto [tokens, cached] : shapes) {
        RequestChunk c{std::vector<int32_t>(tokens, 1), cached, {}, true};
        const int64_t blocks = (tokens + cached + block_size - 1) / block_size;
        for (int64_t b = 0; b < blocks; ++b) c.block_ids.push_back(static_cast<int32_t>(blocks_used + 2 * b));
        blocks_used += 2 * blocks;  // interleaved with unused blocks: block ids are not positions
        max_blocks = std::max(max_blocks, blocks);
        chunks.push_back(c);
      }
      HostStep s = build_host_step(chunks, block_size, max_blocks);
      // Two padded requests and three padded tokens, filled as DESIGN.md's default contract says.
      const int64_t real_tokens = static_cast<int64_t>(s.input_ids.size()), n = real_tokens + 3;
      for (int p = 0; p < 2; ++p) {
        s.query_start_loc.push_back(s.query_start_loc.back());
        s.seq_lens.push_back(0);
        s.block_table.insert(s.block_table.end(), max_blocks, 0);
      }
      const int64_t reqs = static_cast<int64_t>(s.seq_lens.size()), num_blocks = blocks_used;
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

// ---- the linear ----

struct LinearCase {
  int64_t in, out;
  std::vector<int64_t> ns;
};

TEST(CudaKernelsLinear, MatchesCpu) {
  FG_REQUIRE_GPU();
  Env e;
  const std::vector<LinearCase> cases = {{64, 40, {1, 2, 7, 16, 17, 64, 300}},
                                         {520, 1000, {1, 2, 7, 16, 17, 64, 300}},
                                         {2048, 512, {1, 2, 7, 16, 17, 64, 300}},
                                         {4096, 4096, {1, 16, 17}},
                                         // the streamed kernel (on an H200), with a partial k chunk
                                         {520, 20000, {1, 9, 16}}};
  for (const LinearCase& c : cases) {
    Bf16Values w = e.random(c.out * c.in, 1.0f / std::sqrt(static_cast<float>(c.in)));
    Bf16Values b = e.random(c.out, 0.5f);
    const Tensor w_gpu = e.bf16(w, {c.out, c.in}), b_gpu = e.bf16(b, {c.out});
    for (int64_t n : c.ns) {
      Bf16Values x = e.random(n * c.in);
      const Tensor x_gpu = e.bf16(x, {n, c.in});
      for (bool with_bias : {false, true}) {
        std::vector<float> ref(n * c.out);
        const Tensor b_host = host_bf16(b.bits, {c.out});
        e.cpu.linear(host(x.values, {n, c.in}), host_bf16(w.bits, {c.out, c.in}), with_bias ? &b_host : nullptr,
                     host(ref, {n, c.out}));
        for (DType out_dtype : {DType::kBF16, DType::kF32}) {
          const Tensor out = e.poisoned(out_dtype, {n, c.out});
          e.gpu.linear(x_gpu, w_gpu, with_bias ? &b_gpu : nullptr, out);
          EXPECT_LE(relative_error(floats(out), ref), kTolerance)
              << c.in << " -> " << c.out << " n " << n << (with_bias ? " bias " : " ") << dtype_name(out_dtype);
        }
      }
    }
  }
}

// Each small-n kernel forced on every shape, whichever the shape rule would pick: partial row
// tiles (1003, 40 rows), k not a multiple of the streamed kernel's 256-wide chunk (520 = 2 x 256
// + 8, 64 < 256), grids smaller than the device (40, 1003 rows), blocks with a partial last pass
// (on an H200's 264 streamed blocks, 20000 rows are 9 or 10 tiles of 8 per block: passes of 8
// then 1 or 2) or several (60000 rows: 28 or 29 tiles), the direct kernel's one-warp grids, and
// the streamed kernel's slices of k, which streamed_k_slices gives the shapes of few rows (on an
// H200: 520 -> 1003 in 3 slices of one chunk, 2048 -> 512 in 8, 4096 -> 4096 in 2).
TEST(CudaKernelsLinear, BothSmallNKernelsMatchCpu) {
  FG_REQUIRE_GPU();
  Env e;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 40},     {520, 1003},  {2048, 512},
                                                           {4096, 4096}, {520, 20000}, {256, 60000}};
  for (auto [in, out_features] : shapes) {
    Bf16Values w = e.random(out_features * in, 1.0f / std::sqrt(static_cast<float>(in)));
    Bf16Values b = e.random(out_features, 0.5f), x = e.random(16 * in);
    const Tensor w_gpu = e.bf16(w, {out_features, in}), b_gpu = e.bf16(b, {out_features});
    const Tensor x_gpu = e.bf16(x, {16, in}), b_host = host_bf16(b.bits, {out_features});
    for (int64_t n : {1, 2, 7, 8, 9, 16}) {
      std::vector<float> ref(n * out_features), x_rows = slice(x.values, 0, static_cast<size_t>(n * in));
      e.cpu.linear(host(x_rows, {n, in}), host_bf16(w.bits, {out_features, in}), &b_host,
                   host(ref, {n, out_features}));
      for (LinearPath path : {LinearPath::kSmallNDirect, LinearPath::kSmallNStreamed}) {
        for (DType out_dtype : {DType::kBF16, DType::kF32}) {
          const Tensor out = e.poisoned(out_dtype, {n, out_features});
          e.gpu.linear_with(path, x_gpu.rows(0, n), w_gpu, &b_gpu, out);
          EXPECT_LE(relative_error(floats(out), ref), kTolerance)
              << in << " -> " << out_features << " n " << n << " path " << static_cast<int>(path) << " "
              << dtype_name(out_dtype);
        }
      }
    }
  }
}

// The streamed kernel's rows are bit-identical for every n (its sum order depends on `in` alone),
// on a grid of one pass per block and on one of several passes.
TEST(CudaKernelsLinear, StreamedRowsAreBitIdenticalForEveryN) {
  FG_REQUIRE_GPU();
  Env e;
  for (auto [in, out_features] : {std::pair<int64_t, int64_t>{2048, 1000}, {520, 20000}}) {
    Bf16Values w = e.random(out_features * in, 0.02f), x = e.random(16 * in);
    const Tensor w_gpu = e.bf16(w, {out_features, in}), x_gpu = e.bf16(x, {16, in});
    const Tensor whole = e.poisoned(DType::kF32, {16, out_features});
    e.gpu.linear_with(LinearPath::kSmallNStreamed, x_gpu, w_gpu, nullptr, whole);
    const std::vector<float> all = floats(whole);
    for (int64_t n : {1, 5, 8, 9, 15}) {
      const Tensor part = e.poisoned(DType::kF32, {n, out_features});
      e.gpu.linear_with(LinearPath::kSmallNStreamed, x_gpu.rows(0, n), w_gpu, nullptr, part);
      EXPECT_EQ(floats(part), slice(all, 0, static_cast<size_t>(n * out_features)))
          << in << " -> " << out_features << " n " << n;
    }
  }
}

// Both small-n kernels are launched with PDL and start fetching weights before the kernel that
// writes their tokens has finished. Two linears chained through a poisoned buffer (direct ->
// direct, streamed -> streamed with and without slices of k, streamed -> direct), eagerly and as a
// graph replay, must give the bits of the same two run with a synchronize between them: a missing
// wait would let the second read poison (NaN) or half-written rows, or meet the first's slice
// sums in the shared workspace.
TEST(CudaKernelsLinear, ChainedSmallNLinearsWaitForTheirInputs) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t n = 16, in = 2048;
  struct Chain {
    LinearPath first, second;
    int64_t mid, out_features;
  };
  const LinearPath direct = LinearPath::kSmallNDirect, streamed = LinearPath::kSmallNStreamed;
  ASSERT_GT(cuda::streamed_k_slices(2048, in, e.gpu.sm_count()), 1);
  ASSERT_EQ(cuda::streamed_k_slices(20000, in, e.gpu.sm_count()), 1);
  for (const Chain& c : {Chain{direct, direct, 2048, 2048}, Chain{streamed, streamed, 2048, 2048},
                         Chain{streamed, streamed, 20000, 2048}, Chain{streamed, direct, 20000, 2048}}) {
    const std::string what = fmt::format("{} -> {} (path {}) -> {} (path {})", in, c.mid, static_cast<int>(c.first),
                                          c.out_features, static_cast<int>(c.second));
    const Tensor w_a = e.bf16(e.random(c.mid * in, 1.0f / std::sqrt(static_cast<float>(in))), {c.mid, in});
    const Tensor w_b = e.bf16(e.random(c.out_features * c.mid, 1.0f / std::sqrt(static_cast<float>(c.mid))),
                              {c.out_features, c.mid});
    const Tensor x = e.bf16(e.random(n * in), {n, in});
    const Tensor y = e.alloc(DType::kBF16, {n, c.mid}), z = e.alloc(DType::kF32, {n, c.out_features});
    auto chain = [&] {
      e.gpu.linear_with(c.first, x, w_a, nullptr, y);
      e.gpu.linear_with(c.second, y, w_b, nullptr, z);
    };

    gpu_test::poison(y);
    e.gpu.linear_with(c.first, x, w_a, nullptr, y);
    e.gpu.synchronize();
    e.gpu.linear_with(c.second, y, w_b, nullptr, z);
    const std::vector<float> ref = floats(z);
    ASSERT_TRUE(std::all_of(ref.begin(), ref.end(), [](float v) { return std::isfinite(v); })) << what;

    for (int rep = 0; rep < 3; ++rep) {
      gpu_test::poison(y);
      gpu_test::poison(z);
      chain();
      EXPECT_EQ(floats(z), ref) << what << ", eager, repetition " << rep;
    }
    e.gpu.begin_capture();
    chain();
    std::unique_ptr<Graph> graph = e.gpu.end_capture();
    for (int rep = 0; rep < 3; ++rep) {
      gpu_test::poison(y);
      gpu_test::poison(z);
      graph->replay();
      EXPECT_EQ(floats(z), ref) << what << ", graph replay, repetition " << rep;
    }
  }
}

// The streamed kernel at slice counts of k and 1 or 2 blocks per SM, forced: each matches the CPU,
// gives bit-identical rows for every n and either grid (the grid, and with it the pass size, moves
// no sum: the rule may pick it by n), and writes every output on every run (each run gets a freshly poisoned output; a
// tile's arrival count left armed by the run before would leave its rows poisoned). Shapes: a
// partial row tile and a partial last chunk of k (1003 x 1000: 126 tiles, 4 chunks, the last 232
// wide), uneven slices (3 of 4 chunks), blocks whose units straddle two slices, the 8B o_proj.
TEST(CudaKernelsLinear, StreamedSlicesAndGridsMatchCpuAndAreBitIdenticalForEveryN) {
  FG_REQUIRE_GPU();
  Env e;
  cuda::StreamedLinear streamed(e.gpu.sm_count());
  struct SliceCase {
    int64_t in, out_features;
    std::vector<int> slice_counts;
  };
  for (const SliceCase& c : {SliceCase{1000, 1003, {1, 2, 3, 4}}, SliceCase{4096, 4096, {1, 2, 3, 4}}}) {
    Bf16Values w = e.random(c.out_features * c.in, 1.0f / std::sqrt(static_cast<float>(c.in)));
    Bf16Values b = e.random(c.out_features, 0.5f), x = e.random(16 * c.in);
    const Tensor w_gpu = e.bf16(w, {c.out_features, c.in}), b_gpu = e.bf16(b, {c.out_features});
    const Tensor x_gpu = e.bf16(x, {16, c.in}), b_host = host_bf16(b.bits, {c.out_features});
    std::vector<float> ref(16 * c.out_features);
    e.cpu.linear(host(x.values, {16, c.in}), host_bf16(w.bits, {c.out_features, c.in}), &b_host,
                 host(ref, {16, c.out_features}));
    auto run = [&](int64_t n, int slices, int blocks_per_sm) {
      const Tensor out = e.poisoned(DType::kF32, {n, c.out_features});
      streamed.run(static_cast<const __nv_bfloat16*>(x_gpu.data), static_cast<const __nv_bfloat16*>(w_gpu.data),
                   static_cast<const __nv_bfloat16*>(b_gpu.data), cuda::LinearOutputs::whole(out.data, c.out_features),
                   true, n, c.in, c.out_features, e.gpu.stream(), slices, blocks_per_sm);
      return floats(out);
    };
    for (int slices : c.slice_counts) {
      const std::string what = fmt::format("{} -> {}, {} slices", c.in, c.out_features, slices);
      const std::vector<float> all = run(16, slices, cuda::kStreamedBlocksPerSm);
      EXPECT_LE(relative_error(all, ref), kTolerance) << what;
      for (int blocks_per_sm = 1; blocks_per_sm <= cuda::kStreamedBlocksPerSm; ++blocks_per_sm)
        for (int64_t n : {1, 7, 8, 9, 16})
          EXPECT_EQ(run(n, slices, blocks_per_sm), slice(all, 0, static_cast<size_t>(n * c.out_features)))
              << what << ", " << blocks_per_sm << " blocks per SM, n " << n;
    }
  }
}

// linear_group over weights (and biases) back to back runs one matmul whose outputs land split
// into the parts' tensors: every part matches the CPU, and its bits are those of the one linear
// over the spanning weight (columns of its output) at n <= 16, or of the part's own linear at
// larger n (cuBLASLt runs the parts apart). Shapes: q/k/v-like parts on the direct kernel with
// and without biases, gate/up-like parts on the streamed one (8192 rows), F32 and BF16 outputs;
// parts in separate allocations, or with outputs of two dtypes, fall back to one linear each.
TEST(CudaKernelsLinear, GroupedLinearIsOneMatmulSplitIntoItsParts) {
  FG_REQUIRE_GPU();
  Env e;
  struct GroupCase {
    int64_t in;
    std::vector<int64_t> rows;
    bool biased;
  };
  // The columns [begin, begin + width) of an [n, total] row-major matrix.
  auto columns = [](const std::vector<float>& m, int64_t n, int64_t total, int64_t begin, int64_t width) {
    std::vector<float> out;
    for (int64_t i = 0; i < n; ++i)
      out.insert(out.end(), m.begin() + i * total + begin, m.begin() + i * total + begin + width);
    return out;
  };
  for (const GroupCase& c : {GroupCase{512, {192, 64, 64}, false}, GroupCase{512, {200, 56, 56}, true},
                             GroupCase{1024, {4096, 4096}, false}}) {
    int64_t total = 0;
    for (int64_t r : c.rows) total += r;
    Bf16Values w = e.random(total * c.in, 1.0f / std::sqrt(static_cast<float>(c.in)));
    Bf16Values b = e.random(total, 0.5f), x = e.random(40 * c.in);
    const Tensor w_all = e.bf16(w, {total, c.in}), b_all = e.bf16(b, {total}), x_gpu = e.bf16(x, {40, c.in});
    const Tensor b_host = host_bf16(b.bits, {total});
    std::vector<float> ref(40 * total);
    e.cpu.linear(host(x.values, {40, c.in}), host_bf16(w.bits, {total, c.in}), c.biased ? &b_host : nullptr,
                 host(ref, {40, total}));
    // The same weights again, each part in an allocation of its own, one row longer than the part,
    // so that no part can end where the next begins.
    std::vector<Tensor> w_apart, b_apart;
    for (int64_t p = 0, begin = 0; p < static_cast<int64_t>(c.rows.size()); begin += c.rows[p++]) {
      w_apart.push_back(e.alloc(DType::kBF16, {c.rows[p] + 1, c.in}).rows(0, c.rows[p]));
      b_apart.push_back(e.alloc(DType::kBF16, {c.rows[p] + 8}).rows(0, c.rows[p]));
      FG_CUDA_CHECK(cudaMemcpy(w_apart.back().data, w_all.rows(begin, c.rows[p]).data, w_apart.back().nbytes(),
                               cudaMemcpyDeviceToDevice));
      FG_CUDA_CHECK(cudaMemcpy(b_apart.back().data, b_all.rows(begin, c.rows[p]).data, b_apart.back().nbytes(),
                               cudaMemcpyDeviceToDevice));
    }
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (int64_t n : {1, 7, 9, 16, 40}) {
        const Tensor x_n = x_gpu.rows(0, n);
        const std::string what = fmt::format("in {}, {} parts of {} rows{}, n {}, {}", c.in, c.rows.size(),
                                             c.rows[0], c.biased ? ", biased" : "", n, dtype_name(dtype));
        const Tensor whole = e.poisoned(dtype, {n, total});
        e.gpu.linear(x_n, w_all, c.biased ? &b_all : nullptr, whole);
        const std::vector<float> whole_values = floats(whole);
        // run(back_to_back, mixed_dtypes): the parts' outputs after one linear_group.
        auto run = [&](bool back_to_back, bool mixed_dtypes) {
          std::vector<Tensor> weights, biases;
          std::vector<LinearPart> parts;
          for (size_t p = 0, begin = 0; p < c.rows.size(); begin += c.rows[p++]) {
            weights.push_back(back_to_back ? w_all.rows(begin, c.rows[p]) : w_apart[p]);
            biases.push_back(back_to_back ? b_all.rows(begin, c.rows[p]) : b_apart[p]);
          }
          for (size_t p = 0; p < c.rows.size(); ++p) {
            const DType part_dtype = mixed_dtypes && p == 1 ? (dtype == DType::kF32 ? DType::kBF16 : DType::kF32)
                                                            : dtype;
            parts.push_back({&weights[p], c.biased ? &biases[p] : nullptr, e.poisoned(part_dtype, {n, c.rows[p]})});
          }
          e.gpu.linear_group(x_n, parts);
          std::vector<std::vector<float>> outs;
          for (const LinearPart& part : parts) outs.push_back(floats(part.out));
          return outs;
        };
        const auto grouped = run(true, false), apart = run(false, false), mixed = run(true, true);
        for (size_t p = 0, begin = 0; p < c.rows.size(); begin += c.rows[p++]) {
          const std::string part = fmt::format("{}, part {}", what, p);
          EXPECT_LE(relative_error(grouped[p], columns(ref, n, total, begin, c.rows[p])), kTolerance) << part;
          const Tensor own = e.poisoned(dtype, {n, c.rows[p]});
          e.gpu.linear(x_n, w_apart[p], c.biased ? &b_apart[p] : nullptr, own);
          const std::vector<float> own_values = floats(own);
          if (n <= cuda::kSmallNMaxRows)
            EXPECT_EQ(grouped[p], columns(whole_values, n, total, begin, c.rows[p])) << part;
          else
            EXPECT_EQ(grouped[p], own_values) << part;
          EXPECT_EQ(apart[p], own_values) << part << ", in separate allocations";
          if (p != 1) EXPECT_EQ(mixed[p], own_values) << part << ", outputs of two dtypes";
        }
      }
    }
  }
}

// linear_silu_mul: where the gate/up span takes the gated streamed kernel (one launch), its output
// has the bits of the grouped linear then silu_mul (the steps it replaces: gate and up are summed in
// the span's order and rounded to BF16 before the product), at every small n; elsewhere it runs
// those steps. Both against the CPU. The shapes: full passes (4096 rows, one chunk of k) and a
// last, partial pass with k past the last whole chunk (4104 rows, k = 520); 512 rows is too small
// for the streamed kernel, and n = 17 runs cuBLASLt.
TEST(CudaKernelsLinear, GatedLinearHasTheBitsOfGroupedLinearThenSiluMul) {
  FG_REQUIRE_GPU();
  Env e;
  struct GatedCase {
    int64_t intermediate, in;
    bool fused;
  };
  for (const GatedCase& c : {GatedCase{4096, 256, true}, GatedCase{4104, 520, true}, GatedCase{512, 256, false}}) {
    ASSERT_EQ(cuda::gated_linear_applies(c.intermediate, c.in, e.gpu.sm_count()), c.fused) << c.intermediate;
    const int64_t inter = c.intermediate;
    Bf16Values w = e.random(2 * inter * c.in, 1.0f / std::sqrt(static_cast<float>(c.in))), x = e.random(17 * c.in);
    const Tensor span = e.bf16(w, {2 * inter, c.in}), x_gpu = e.bf16(x, {17, c.in});
    const Tensor gate_w = span.rows(0, inter), up_w = span.rows(inter, inter);
    std::vector<float> gate_ref(17 * inter), up_ref(17 * inter), ref(17 * inter);
    std::vector<uint16_t> gate_bits(w.bits.begin(), w.bits.begin() + inter * c.in),
        up_bits(w.bits.begin() + inter * c.in, w.bits.end());
    e.cpu.linear(host(x.values, {17, c.in}), host_bf16(gate_bits, {inter, c.in}), nullptr, host(gate_ref, {17, inter}));
    e.cpu.linear(host(x.values, {17, c.in}), host_bf16(up_bits, {inter, c.in}), nullptr, host(up_ref, {17, inter}));
    e.cpu.silu_mul(host(gate_ref, {17, inter}), host(up_ref, {17, inter}), host(ref, {17, inter}));
    for (int64_t n : {1, 5, 8, 9, 16, 17}) {
      const std::string what = fmt::format("intermediate {}, in {}, n {}", inter, c.in, n);
      const Tensor x_n = x_gpu.rows(0, n);
      const Tensor gate = e.poisoned(DType::kBF16, {n, inter}), up = e.poisoned(DType::kBF16, {n, inter});
      const Tensor fused = e.poisoned(DType::kBF16, {n, inter}), stepwise = e.poisoned(DType::kBF16, {n, inter});
      e.gpu.linear_silu_mul(x_n, gate_w, up_w, gate, up, fused);
      e.gpu.linear_group(x_n, {{&gate_w, nullptr, gate}, {&up_w, nullptr, up}});
      e.gpu.silu_mul(gate, up, stepwise);
      const std::vector<float> fused_values = floats(fused);
      EXPECT_EQ(fused_values, floats(stepwise)) << what;
      EXPECT_LE(relative_error(fused_values, slice(ref, 0, static_cast<size_t>(n * inter))), kTolerance) << what;
    }
  }
}

// Graph == eager (DESIGN.md rule 7): the rows of an n-row linear are bit-identical to the same
// rows of a linear over the whole bucket that holds n (what a graph captured at the bucket's size
// computes), for the small-n kernel and for cuBLASLt.
TEST(CudaKernelsLinear, RowsAreBitIdenticalAcrossTheirBucket) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t in = 2048, out_features = 1000;
  Bf16Values w = e.random(out_features * in, 0.02f), b = e.random(out_features, 0.5f), x = e.random(64 * in);
  const Tensor w_gpu = e.bf16(w, {out_features, in}), b_gpu = e.bf16(b, {out_features}), x_gpu = e.bf16(x, {64, in});
  auto run = [&](int64_t n, DType dtype) {
    const Tensor out = e.poisoned(dtype, {n, out_features});
    e.gpu.linear(x_gpu.rows(0, n), w_gpu, &b_gpu, out);
    return floats(out);
  };
  auto check = [&](const std::vector<std::pair<int64_t, int64_t>>& pairs, const char* what) {
    for (DType dtype : {DType::kBF16, DType::kF32}) {
      for (auto [n, top] : pairs) {
        const std::vector<float> whole = run(top, dtype), part = run(n, dtype);
        EXPECT_EQ(part, slice(whole, 0, part.size())) << what << ": n " << n << " vs " << top << " "
                                                      << dtype_name(dtype);
      }
    }
  };
  check({{1, 16}, {5, 16}, {8, 16}, {9, 16}, {15, 16}}, "small-n kernel");
  check({{17, 32}, {20, 32}, {31, 32}, {33, 64}, {50, 64}}, "cuBLASLt, power-of-two buckets");
  e.gpu.set_capture_sizes({4, 8, 24, 40});
  check({{3, 4}, {6, 8}, {17, 24}, {20, 24}, {25, 40}, {39, 40}}, "cuBLASLt, configured buckets");
}

TEST(CudaKernelsLinear, SmallNKernelAndCublasLtAgreeAtTheBoundary) {
  FG_REQUIRE_GPU();
  Env e;
  for (auto [in, out_features] : {std::pair<int64_t, int64_t>{4096, 4096}, {2048, 8192}, {1024, 32000}}) {
    Bf16Values w = e.random(out_features * in, 1.0f / std::sqrt(static_cast<float>(in))), x = e.random(17 * in);
    const Tensor w_gpu = e.bf16(w, {out_features, in}), x_gpu = e.bf16(x, {17, in});
    const DType dtype = out_features > 10000 ? DType::kF32 : DType::kBF16;
    const Tensor small = e.poisoned(dtype, {16, out_features}), lt = e.poisoned(dtype, {16, out_features});
    e.gpu.linear_with(LinearPath::kSmallN, x_gpu.rows(0, 16), w_gpu, nullptr, small);
    e.gpu.linear_with(LinearPath::kCublasLt, x_gpu.rows(0, 16), w_gpu, nullptr, lt);
    EXPECT_LE(relative_error(floats(small), floats(lt)), kTolerance) << in << " -> " << out_features;
    // The automatic choice: 16 rows on the small-n kernel, 17 on cuBLASLt.
    const Tensor auto17 = e.poisoned(dtype, {17, out_features});
    e.gpu.linear(x_gpu, w_gpu, nullptr, auto17);
    EXPECT_LE(relative_error(slice(floats(auto17), 0, 16 * out_features), floats(small)), kTolerance);
  }
}

// Batch-invariant mode (Backend::set_batch_invariant): every row of a linear has the same bits
// whatever the number of rows (1, within 16, past 16 where cuBLASLt would take over, a prefill's
// hundreds), on the direct kernel and on the streamed one.
TEST(CudaKernelsLinear, BatchInvariantRowsDoNotDependOnTheRowCount) {
  FG_REQUIRE_GPU();
  Env e;
  e.gpu.set_batch_invariant(true);
  const int64_t in = 520;
  ASSERT_FALSE(cuda::prefers_streamed_linear(1000, in, e.gpu.sm_count()));
  ASSERT_TRUE(cuda::prefers_streamed_linear(20000, in, e.gpu.sm_count()));
  for (int64_t out_features : {1000, 20000}) {
    const int64_t rows = 300;
    Bf16Values w = e.random(out_features * in, 0.04f), b = e.random(out_features, 0.5f), x = e.random(rows * in);
    const Tensor w_gpu = e.bf16(w, {out_features, in}), b_gpu = e.bf16(b, {out_features});
    const Tensor x_gpu = e.bf16(x, {rows, in});
    const Tensor whole = e.poisoned(DType::kF32, {rows, out_features});
    e.gpu.linear(x_gpu, w_gpu, &b_gpu, whole);
    const std::vector<float> all = floats(whole);
    for (int64_t n : {1, 7, 16, 17, 33, 299}) {
      const int64_t first = rows - n;  // the last n rows, so that row r meets a different grouping
      const Tensor part = e.poisoned(DType::kF32, {n, out_features});
      e.gpu.linear(x_gpu.rows(first, n), w_gpu, &b_gpu, part);
      EXPECT_EQ(floats(part), slice(all, static_cast<size_t>(first * out_features), static_cast<size_t>(n * out_features)))
          << "n " << n << " of " << rows << ", out " << out_features;
    }
  }
}

// A captured step replays bit-identically to the eager run of its real rows (linear, norm and
// activation chained through the padded buffers a runner would capture with).
TEST(CudaKernelsGraph, ReplayOfAPaddedStepEqualsEagerRows) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t hidden = 512, inter = 1024;
  e.gpu.set_capture_sizes({8, 32});
  Bf16Values norm_w = e.around(hidden, 1.0f, 0.1f), w1 = e.random(2 * inter * hidden, 0.04f),
             w2 = e.random(hidden * inter, 0.03f);
  const Tensor gate_up = e.bf16(w1, {2 * inter, hidden});
  const Tensor norm_gpu = e.bf16(norm_w, {hidden}), gate_w = gate_up.rows(0, inter),
               up_w = gate_up.rows(inter, inter), down_w = e.bf16(w2, {hidden, inter});
  const Tensor x = e.alloc(DType::kBF16, {32, hidden}), normed = e.alloc(DType::kBF16, {32, hidden}),
               gate = e.alloc(DType::kBF16, {32, inter}), up = e.alloc(DType::kBF16, {32, inter}),
               act = e.alloc(DType::kBF16, {32, inter}), out = e.alloc(DType::kF32, {32, hidden});
  auto step = [&](int64_t n) {
    e.gpu.rms_norm(x.rows(0, n), norm_gpu, 1e-5f, normed.rows(0, n));
    e.gpu.linear(normed.rows(0, n), gate_w, nullptr, gate.rows(0, n));
    e.gpu.linear(normed.rows(0, n), up_w, nullptr, up.rows(0, n));
    e.gpu.silu_mul(gate.rows(0, n), up.rows(0, n), act.rows(0, n));
    e.gpu.linear(act.rows(0, n), down_w, nullptr, out.rows(0, n));
  };
  for (auto [n, bucket] : {std::pair<int64_t, int64_t>{5, 8}, {20, 32}}) {
    step(bucket);  // plans cuBLASLt outside the capture
    e.gpu.begin_capture();
    step(bucket);
    std::unique_ptr<Graph> graph = e.gpu.end_capture();
    for (int round = 0; round < 2; ++round) {  // new inputs each time: only buffer contents change
      gpu_test::upload(x, e.random(32 * hidden).bits);
      gpu_test::poison(out);
      step(n);
      const std::vector<float> eager = slice(floats(out), 0, n * hidden);
      gpu_test::poison(out);
      graph->replay();
      EXPECT_EQ(slice(floats(out), 0, n * hidden), eager) << "n " << n << " bucket " << bucket << " round " << round;
    }
  }
}

}  // namespace
}  // namespace fg
