// tests/gpu/test_cuda_engine.cpp — the engine over the e2e fixture models on the GPU, through
// CUDA graph replays, in the batch-invariant mode: 32 requests together equal each alone
// (engine_model_check.h). The fixtures' head sizes (16, 32) are served by the reference attention.
#include "backend/backend_factory.h"
#include "engine_model_check.h"
#include "gpu/gpu_test_support.h"

namespace fg {
namespace {

class CudaEngineOnModel : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaEngineOnModel, ThirtyTwoRequestsTogetherEqualEachAlone) {
  FG_REQUIRE_GPU();
  const GpuBackendFactory gpu = cuda_backend_factory();
  const auto prepare = [gpu](Backend& backend, const ModelConfig& c, int64_t max_tokens, int64_t max_seqs) {
    gpu.set_attention(backend, "reference", attention_limits(c, max_tokens, max_seqs, 512, 16));
    // By default a row's bits depend on the GEMM algorithm its step's size selects (cuBLASLt's
    // for more than 16 rows, the small-n kernel below), so batching may flip near-tied tokens;
    // the batch-invariant mode is what makes "together == alone" hold on the GPU.
    backend.set_batch_invariant(true);
  };
  test::expect_together_equals_alone([gpu] { return gpu.create(0); }, prepare,
                                     test::testdata_dir() + "/e2e/" + GetParam());
}

INSTANTIATE_TEST_SUITE_P(E2eFixtures, CudaEngineOnModel, ::testing::Values("tiny-llama2tok", "tiny-qwen3tok"));

}  // namespace
}  // namespace fg
