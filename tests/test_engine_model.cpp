// tests/test_engine_model.cpp — the engine over the e2e fixture models on the CPU backend,
// through the full-graph runner (CPU graphs): see engine_model_check.h.
#include "backend/cpu/cpu_backend.h"
#include "engine_model_check.h"

namespace fg {
namespace {

class EngineOnModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineOnModel, ThirtyTwoRequestsTogetherEqualEachAlone) {
  test::expect_together_equals_alone([] { return std::make_unique<CpuBackend>(2); }, nullptr,
                                     test::testdata_dir() + "/e2e/" + GetParam());
}

INSTANTIATE_TEST_SUITE_P(E2eFixtures, EngineOnModel, ::testing::Values("tiny-llama2tok", "tiny-qwen3tok"));

}  // namespace
}  // namespace fg
