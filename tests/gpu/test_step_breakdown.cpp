// tests/gpu/test_step_breakdown.cpp — breakdown_captured_step (step_breakdown.h), the tool behind
// `bench kernels --tables decode_step`: the kernels of a captured chain in the order they first
// run, their launch counts and registers, and shares that add up to the whole replay.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/kernels/step_breakdown.h"
#include "gpu/cuda_kernels_env.h"

namespace fg {
namespace {

using namespace cuda_kernel_test;

TEST(CudaStepBreakdown, RowsFollowTheChainAndSharesAddUpToTheStep) {
  FG_REQUIRE_GPU();
  Env e;
  const int64_t n = 4, hidden = 2048;
  const Tensor residual = e.bf16(e.random(n * hidden), {n, hidden}), x = e.bf16(e.random(n * hidden), {n, hidden});
  const Tensor weight = e.bf16(e.around(hidden, 1.0f, 0.1f), {hidden}), out = e.poisoned(DType::kBF16, {n, hidden});
  // add, rms_norm, add: two kernels, the first launched twice.
  const bench::StepBreakdown b = bench::breakdown_captured_step(
      e.gpu.stream(),
      [&] {
        e.gpu.add(residual, x);
        e.gpu.rms_norm(residual, weight, 1e-5f, out);
        e.gpu.add(residual, x);
      },
      5);
  ASSERT_EQ(b.kernels.size(), 2u);
  EXPECT_EQ(b.kernels[0].launches, 2);
  EXPECT_EQ(b.kernels[1].launches, 1);
  EXPECT_NE(b.kernels[0].name, b.kernels[1].name);
  EXPECT_NE(b.kernels[1].name.find("rms_norm"), std::string::npos) << b.kernels[1].name;
  double sum = 0.0;
  for (const bench::KernelShare& k : b.kernels) {
    EXPECT_GT(k.registers, 0) << k.name;
    EXPECT_EQ(k.name.find('('), std::string::npos) << "the parameter list is cut: " << k.name;
    sum += k.us;
  }
  EXPECT_GT(b.step_us, 0.0);
  EXPECT_NEAR(sum, b.step_us, 1e-6 * b.step_us);  // prefix differences telescope to the whole chain
}

}  // namespace
}  // namespace fg
