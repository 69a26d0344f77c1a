// backend/cpu/cpu_backend.h — the fp32 reference backend: the numerical oracle of every kernel.
//
// Clarity and accurate accumulation come before speed; work is still split over a thread pool
// (by output rows, or by token and head), which never changes a row's arithmetic. Activations
// are F32; weights may be BF16, F16 or F32 and are read in place (e.g. from the checkpoint mmap).
// Out-of-range ids, positions, slots and block ids fail loudly instead of reading wild memory.
#pragma once

#include "backend/backend.h"
#include "core/thread_pool.h"

namespace fg {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int num_threads = 0) : pool_(num_threads) {}

  Device device() const override { return Device::kHost; }
  std::string name() const override { return "cpu"; }
  DType activation_dtype() const override { return DType::kF32; }
  int num_threads() const { return pool_.size(); }

  Allocation allocate(DType dtype, std::initializer_list<int64_t> dims) override;
  void copy_from_host(const Tensor& dst, const void* src) override;
  void copy_to_host(void* dst, const Tensor& src) override;
  void synchronize() override {}

  void embedding(const Tensor& ids, const Tensor& table, const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void add_rms_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                    const Tensor& out) override;
  void linear(const Tensor& x, const Tensor& weight, const Tensor* bias, const Tensor& out) override;
  void head_rms_norm(const Tensor& x, const Tensor& weight, float eps) override;
  void rope_and_cache_write(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                            const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                            const KvCacheLayer& cache) override;
  void attention(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                 const Tensor& out) override;
  void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void gather_rows(const Tensor& x, const Tensor& indices, const Tensor& out) override;

 private:
  ThreadPool pool_;
};

}  // namespace fg
