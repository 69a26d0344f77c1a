// tests/gpu/test_cuda_linear.cpp — CudaBackend's linears against the CpuBackend (the fp32 oracle):
// both small-n kernels (direct and streamed) and cuBLASLt over swept shapes, linear_group and
// linear_silu_mul, and the rules that keep a row's bits: every n in a bucket, graph == eager,
// batch invariance, PDL chains that wait for their inputs. Outputs are poisoned before every run.
//
// Tolerance: relative error <= 1e-2, as gpu_test_support.h explains.
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
// and without biases, gate/up-like parts on the streamed one (8192 rows), parts of odd widths (the
// kernels' stores then go one column at a time, the whole output's two at a time; n <= 16 only),
// F32 and BF16 outputs; parts in separate allocations, or with outputs of two dtypes, fall back to
// one linear each.
TEST(CudaKernelsLinear, GroupedLinearIsOneMatmulSplitIntoItsParts) {
  FG_REQUIRE_GPU();
  Env e;
  struct GroupCase {
    int64_t in;
    std::vector<int64_t> rows;
    bool biased;
    // Parts whose columns begin at odd offsets: the small-n kernels' unpaired stores. Unbiased: the
    // parts' biases would not be 16-byte aligned.
    bool small_n_only = false;
  };
  // The columns [begin, begin + width) of an [n, total] row-major matrix.
  auto columns = [](const std::vector<float>& m, int64_t n, int64_t total, int64_t begin, int64_t width) {
    std::vector<float> out;
    for (int64_t i = 0; i < n; ++i)
      out.insert(out.end(), m.begin() + i * total + begin, m.begin() + i * total + begin + width);
    return out;
  };
  for (const GroupCase& c : {GroupCase{512, {192, 64, 64}, false}, GroupCase{512, {200, 56, 56}, true},
                             GroupCase{1024, {4096, 4096}, false}, GroupCase{512, {201, 55, 56}, false, true}}) {
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
        if (c.small_n_only && n > cuda::kSmallNMaxRows) continue;
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
  for (const GatedCase& c : gated_cases()) {
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

// linear_silu_mul past the small-n rows (cuBLASLt) where up_out follows gate_out in memory: one
// GEMM of the gate/up span into the two as one [n, 2I] scratch, then silu_mul of its halves. Its
// output has the bits of a linear over the span's weight whose halves then go through silu_mul,
// and matches the CPU; n in two cuBLASLt buckets.
TEST(CudaKernelsLinear, GateUpSpanPastSmallNHasTheBitsOfOneGemmThenSiluMul) {
  FG_REQUIRE_GPU();
  Env e;
  for (const GatedCase& c : gated_cases()) {
    const int64_t inter = c.intermediate;
    Bf16Values w = e.random(2 * inter * c.in, 1.0f / std::sqrt(static_cast<float>(c.in)));
    const Tensor span_w = e.bf16(w, {2 * inter, c.in});
    const Tensor gate_w = span_w.rows(0, inter), up_w = span_w.rows(inter, inter);
    for (int64_t n : {17, 40}) {
      const std::string what = fmt::format("intermediate {}, in {}, n {}", inter, c.in, n);
      Bf16Values x = e.random(n * c.in);
      const Tensor x_gpu = e.bf16(x, {n, c.in});
      const Tensor scratch = e.poisoned(DType::kBF16, {2 * n, inter});  // gate_out, then up_out
      const Tensor fused = e.poisoned(DType::kBF16, {n, inter});
      e.gpu.linear_silu_mul(x_gpu, gate_w, up_w, scratch.rows(0, n), scratch.rows(n, n), fused);

      const Tensor span_out = e.poisoned(DType::kBF16, {n, 2 * inter});
      e.gpu.linear(x_gpu, span_w, nullptr, span_out);
      const auto bits = gpu_test::download<uint16_t>(span_out);
      std::vector<uint16_t> gate_bits, up_bits;
      for (int64_t t = 0; t < n; ++t) {
        const auto row = bits.begin() + t * 2 * inter;
        gate_bits.insert(gate_bits.end(), row, row + inter);
        up_bits.insert(up_bits.end(), row + inter, row + 2 * inter);
      }
      const Tensor gate = e.alloc(DType::kBF16, {n, inter}), up = e.alloc(DType::kBF16, {n, inter});
      gpu_test::upload(gate, gate_bits);
      gpu_test::upload(up, up_bits);
      const Tensor stepwise = e.poisoned(DType::kBF16, {n, inter});
      e.gpu.silu_mul(gate, up, stepwise);
      const std::vector<float> fused_values = floats(fused);
      EXPECT_EQ(fused_values, floats(stepwise)) << what;

      std::vector<float> gate_ref(n * inter), up_ref(n * inter), ref(n * inter);
      std::vector<uint16_t> gate_w_bits(w.bits.begin(), w.bits.begin() + inter * c.in),
          up_w_bits(w.bits.begin() + inter * c.in, w.bits.end());
      e.cpu.linear(host(x.values, {n, c.in}), host_bf16(gate_w_bits, {inter, c.in}), nullptr,
                   host(gate_ref, {n, inter}));
      e.cpu.linear(host(x.values, {n, c.in}), host_bf16(up_w_bits, {inter, c.in}), nullptr, host(up_ref, {n, inter}));
      e.cpu.silu_mul(host(gate_ref, {n, inter}), host(up_ref, {n, inter}), host(ref, {n, inter}));
      EXPECT_LE(relative_error(fused_values, ref), kTolerance) << what;
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
