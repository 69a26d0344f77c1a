// tests/gpu/test_gemv_chain.cpp — the GEMV chain probe (gemv_chain_kernels.h) that `bench kernels
// --tables gemv_chain` times: a two-layer chain (q/k/v, o_proj + residual, gate/up + SiLU, down +
// residual) matches a host computation with the same roundings in every configuration, the
// resident kernel gives the bits of the chained launches, its timeline holds every block's events
// in order, and shapes and grids the kernel cannot take are refused.
//
// On an H200 (4224 warps) the q/k/v phase has more rows than warps (some warps take two), and the
// three others few enough that two warps share each row (the kernel's split).
//
// Tolerance: relative error <= 1e-2 (gpu_test_support.h). The host sums each row in index order,
// the kernel in lane order and then a butterfly: fp32 sums that differ in their last bits, which
// the bf16 roundings of the chain may turn into a bf16 step here and there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cuda/gemv_chain_kernels.h"
#include "core/error.h"
#include "gpu/cuda_kernels_env.h"

namespace fg {
namespace {

using namespace cuda_kernel_test;

float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }

// x [hidden] -> q/k/v [qkv] -> x += o([hidden] of q/k/v) -> act = silu-gated(x) -> x += down(act), per layer.
struct Chain {
  static constexpr int kLayers = 2, kHidden = 2048, kQkv = 4500,
                       kInter = 2048;  // kQkv: more rows than an H200 has warps
  Env e;
  Bf16Values weights, x0;
  Tensor w, x, qkv, act, phase_table;
  std::vector<cuda::GemvPhase> phases;

  Chain() {
    const int64_t per_layer = int64_t{kQkv} * kHidden + int64_t{kHidden} * kHidden + 2 * int64_t{kInter} * kHidden +
                              int64_t{kHidden} * kInter;
    weights = e.random(static_cast<size_t>(per_layer * kLayers), 0.05f);
    x0 = e.random(kHidden);
    w = e.bf16(weights, {per_layer * kLayers});
    x = e.alloc(DType::kBF16, {kHidden});
    qkv = e.alloc(DType::kBF16, {kQkv});
    act = e.alloc(DType::kBF16, {kInter});
    auto* next = static_cast<const __nv_bfloat16*>(w.data);
    auto* xp = static_cast<__nv_bfloat16*>(x.data);
    auto* qp = static_cast<__nv_bfloat16*>(qkv.data);
    auto* ap = static_cast<__nv_bfloat16*>(act.data);
    for (int l = 0; l < kLayers; ++l) {
      auto take = [&](int rows, int cols, const __nv_bfloat16* in, __nv_bfloat16* out, cuda::GemvStore store) {
        phases.push_back({next, in, out, rows, cols, store});
        next += int64_t{rows} * cols;
      };
      take(kQkv, kHidden, xp, qp, cuda::GemvStore::kPlain);
      take(kHidden, kHidden, qp, xp, cuda::GemvStore::kAddTo);
      take(2 * kInter, kHidden, xp, ap, cuda::GemvStore::kSiluGated);
      take(kHidden, kInter, ap, xp, cuda::GemvStore::kAddTo);
    }
    std::vector<int64_t> words(phases.size() * sizeof(cuda::GemvPhase) / 8 + 1);
    std::memcpy(words.data(), phases.data(), phases.size() * sizeof(cuda::GemvPhase));
    phase_table = e.device(DType::kI64, words, {static_cast<int64_t>(words.size())});
  }
  const cuda::GemvPhase* device_phases() const { return static_cast<const cuda::GemvPhase*>(phase_table.data); }
  // x back to its first values; q/k/v and the SiLU product poisoned, so that unwritten rows show.
  void reset() {
    gpu_test::upload(x, x0.bits);
    gpu_test::poison(qkv);
    gpu_test::poison(act);
  }
  // The host's chain, with the kernel's roundings: x at the end.
  std::vector<float> host_x() const {
    std::vector<float> hx = x0.values, hq(kQkv), ha(kInter);
    size_t offset = 0;
    auto row_sum = [&](const std::vector<float>& in, int64_t row, int cols) {
      float s = 0.0f;
      for (int c = 0; c < cols; ++c) s += weights.values[offset + static_cast<size_t>(row * cols + c)] * in[c];
      return s;
    };
    for (int l = 0; l < kLayers; ++l) {
      for (int r = 0; r < kQkv; ++r) hq[r] = round_bf16(row_sum(hx, r, kHidden));
      offset += size_t{kQkv} * kHidden;
      std::vector<float> o(kHidden);
      for (int r = 0; r < kHidden; ++r) o[r] = row_sum(hq, r, kHidden);  // q's first kHidden values
      for (int r = 0; r < kHidden; ++r) hx[r] = round_bf16(hx[r] + o[r]);
      offset += size_t{kHidden} * kHidden;
      for (int j = 0; j < kInter; ++j) {
        const float g = round_bf16(row_sum(hx, j, kHidden)), u = round_bf16(row_sum(hx, kInter + j, kHidden));
        ha[j] = round_bf16(g / (1.0f + std::exp(-g)) * u);
      }
      offset += 2 * size_t{kInter} * kHidden;
      for (int r = 0; r < kHidden; ++r) o[r] = row_sum(ha, r, kInter);
      for (int r = 0; r < kHidden; ++r) hx[r] = round_bf16(hx[r] + o[r]);
      offset += size_t{kHidden} * kInter;
    }
    return hx;
  }
};

TEST(GemvChainProbe, BothLaunchersMatchTheHostAndEachOther) {
  FG_REQUIRE_GPU();
  Chain c;
  const int count = static_cast<int>(c.phases.size());
  Tensor counters = c.e.alloc(DType::kI32, {count + 1});
  const std::vector<float> host = c.host_x();
  for (const cuda::GemvChainConfig& config : std::vector<cuda::GemvChainConfig>{
           {256, 1, false}, {256, 2, false}, {256, 1, true}, {1024, 1, false}, {1024, 2, true}}) {
    {
      SCOPED_TRACE(testing::Message() << config.threads << " threads, " << config.preload_groups
                                      << " load groups before the wait, rows handed out " << config.dynamic);
      auto* words = static_cast<unsigned*>(counters.data);
      c.reset();
      cuda::launch_gemv_chain_chained(c.device_phases(), c.phases.data(), count, config, words, c.e.gpu.stream());
      c.e.gpu.synchronize();
      const std::vector<uint16_t> chained = gpu_test::download<uint16_t>(c.x);
      const std::vector<uint16_t> chained_act = gpu_test::download<uint16_t>(c.act);
      c.reset();
      cuda::launch_gemv_chain_persistent(c.device_phases(), c.phases.data(), count, config, words, c.e.gpu.stream());
      c.e.gpu.synchronize();
      EXPECT_EQ(gpu_test::download<uint16_t>(c.x), chained) << "the resident kernel sums as the launches do";
      EXPECT_EQ(gpu_test::download<uint16_t>(c.act), chained_act);
      EXPECT_EQ(gpu_test::download<int32_t>(counters)[0], count * cuda::gemv_chain_blocks(config, c.e.gpu.sm_count()))
          << "every block arrives once per phase";
      const std::vector<float> got = gpu_test::bf16_bits_to_float(chained);
      for (float v : got) ASSERT_TRUE(std::isfinite(v)) << "an unwritten or poisoned value reached x";
      EXPECT_LE(relative_error(got, host), kTolerance);
    }
  }
}

TEST(GemvChainProbe, TimelineHoldsEveryBlocksEventsInOrder) {
  FG_REQUIRE_GPU();
  Chain c;
  const int count = static_cast<int>(c.phases.size());
  Tensor counters = c.e.alloc(DType::kI32, {count + 1});
  cuda::GemvChainConfig config;
  const int blocks = cuda::gemv_chain_blocks(config, c.e.gpu.sm_count());
  Tensor events = c.e.poisoned(DType::kI64, {int64_t{count} * blocks * cuda::kGemvEvents});
  config.timeline = static_cast<unsigned long long*>(events.data);
  c.reset();
  cuda::launch_gemv_chain_persistent(c.device_phases(), c.phases.data(), count, config,
                                     static_cast<unsigned*>(counters.data), c.e.gpu.stream());
  c.e.gpu.synchronize();
  const std::vector<int64_t> t = gpu_test::download<int64_t>(events);
  for (int p = 0; p < count; ++p) {
    for (int b = 0; b < blocks; ++b) {
      const int64_t* e = &t[(static_cast<size_t>(p) * blocks + b) * cuda::kGemvEvents];
      ASSERT_GT(e[cuda::kGemvWaited], 0) << "phase " << p << ", block " << b;
      ASSERT_LE(e[cuda::kGemvWaited], e[cuda::kGemvInputReady]) << "phase " << p << ", block " << b;
      ASSERT_LE(e[cuda::kGemvInputReady], e[cuda::kGemvDone]) << "phase " << p << ", block " << b;
      if (p > 0)
        ASSERT_GE(e[cuda::kGemvWaited],
                  t[(static_cast<size_t>(p - 1) * blocks + b) * cuda::kGemvEvents + cuda::kGemvDone])
            << "a block starts a phase after it ended the one before";
    }
  }
}

TEST(GemvChainProbe, ShapesAndGridsItCannotTakeAreRefused) {
  FG_REQUIRE_GPU();
  Chain c;
  const cuda::GemvChainConfig config;
  Tensor counters = c.e.alloc(DType::kI32, {static_cast<int64_t>(c.phases.size()) + 1});
  auto* words = static_cast<unsigned*>(counters.data);
  std::vector<cuda::GemvPhase> bad = {c.phases[0]};
  bad[0].cols = 1000;  // not a multiple of 1024
  EXPECT_THROW(cuda::launch_gemv_chain_chained(c.device_phases(), bad.data(), 1, config, words, c.e.gpu.stream()),
               Error);
  bad = {c.phases[2]};
  bad[0].rows = 4095;  // a gated phase needs whole pairs
  EXPECT_THROW(cuda::launch_gemv_chain_chained(c.device_phases(), bad.data(), 1, config, words, c.e.gpu.stream()),
               Error);
  EXPECT_THROW(
      cuda::launch_gemv_chain_chained(c.device_phases(), c.phases.data(), 1, {512, 1}, words, c.e.gpu.stream()), Error)
      << "256 or 1024 threads";
  EXPECT_THROW(
      cuda::launch_gemv_chain_chained(c.device_phases(), c.phases.data(), 1, {256, 3}, words, c.e.gpu.stream()), Error)
      << "1 or 2 load groups";
}

}  // namespace
}  // namespace fg
