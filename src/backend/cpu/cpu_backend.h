// backend/cpu/cpu_backend.h — the fp32 reference backend: the numerical oracle of every kernel.
//
// Clarity and accurate accumulation come before speed; work is still split over a thread pool
// (by output rows, or by token and head), which never changes a row's arithmetic. Activations
// are F32; weights may be BF16, F16 or F32 and are read in place (e.g. from the checkpoint mmap).
// Out-of-range ids, positions, slots and block ids fail loudly instead of reading wild memory.
//
// Graphs: between begin_capture() and end_capture() every op is recorded as a closure over its
// tensors (addresses and padded shapes frozen), and replay() runs the closures in order — the CPU
// analogue of a CUDA graph, so that CI exercises the padded, frozen-launch path.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"
#include "core/thread_pool.h"

namespace fg {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int num_threads = 0) : pool_(num_threads) {}

  Device device() const override { return Device::kHost; }
  std::string name() const override { return "cpu"; }
  DType activation_dtype() const override { return DType::kF32; }
  int num_threads() const { return pool_.size(); }
  // The communicator of the tensor-parallel rank this backend runs (none: a single rank).
  void set_communicator(std::shared_ptr<Communicator> communicator) { communicator_ = std::move(communicator); }

  Allocation allocate(DType dtype, std::initializer_list<int64_t> dims) override;
  void copy_from_host(const Tensor& dst, const void* src) override;
  void copy_to_host(void* dst, const Tensor& src) override;
  void synchronize() override {}
  Allocation allocate_staging(size_t bytes) override;

  bool supports_graphs() const override { return true; }
  void begin_capture() override;
  std::unique_ptr<Graph> end_capture() override;

  GraphSupport attention_graph_support() const override { return GraphSupport::kAlways; }
  const PaddingContract& attention_contract() const override { return contract_; }

  void embedding(const Tensor& ids, const Tensor& table, const Tensor& out) override {
    dispatch([=, this] { embedding_now(ids, table, out); });
  }
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override {
    dispatch([=, this] { rms_norm_now(x, weight, eps, out); });
  }
  void add_rms_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                    const Tensor& out) override {
    dispatch([=, this] { add_rms_norm_now(residual, x, weight, eps, out); });
  }
  void add(const Tensor& residual, const Tensor& x) override {
    dispatch([=, this] { add_now(residual, x); });
  }
  void linear(const Tensor& x, const Tensor& weight, const Tensor* bias, const Tensor& out) override {
    const Tensor b = bias ? *bias : Tensor();
    dispatch([=, this] { linear_now(x, weight, b, out); });
  }
  void quantize_fp8(const Tensor& x, float static_scale, const Fp8Rows& out) override {
    dispatch([=, this] { quantize_fp8_now(x, static_scale, out); });
  }
  void linear_fp8_group(const Fp8Rows& x, const std::vector<Fp8LinearPart>& parts) override {
    for (const Fp8LinearPart& p : parts) {
      const Tensor weight = *p.weight, scale = *p.scale, bias = p.bias ? *p.bias : Tensor(), out = p.out;
      dispatch([=, this] { linear_fp8_now(x, weight, scale, bias, out); });
    }
  }
  void quantize_weight_fp8(const Tensor& w, const Tensor& q, const Tensor& scales) override {
    dispatch([=, this] { quantize_weight_fp8_now(w, q, scales); });
  }
  void head_rms_norm(const Tensor& x, const Tensor& weight, float eps) override {
    dispatch([=, this] { head_rms_norm_now(x, weight, eps); });
  }
  void rope_and_cache_write(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                            const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                            const KvCacheLayer& cache) override {
    dispatch([=, this] { rope_and_cache_write_now(q, k, v, positions, slot_mapping, rope_cos_sin, cache); });
  }
  void attention(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                 const Tensor& out) override {
    dispatch([=, this] { attention_now(q, cache, meta, scale, out); });
  }
  void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) override {
    dispatch([=, this] { silu_mul_now(gate, up, out); });
  }
  void all_reduce_sum(const Tensor& x) override {
    Communicator& c = communicator();
    dispatch([=, &c] { c.all_reduce_sum(x); });
  }
  void all_gather_columns(const Tensor& shard, const Tensor& out) override {
    Communicator& c = communicator();
    dispatch([=, &c] { c.all_gather_columns(shard, out); });
  }
  void gather_rows(const Tensor& x, const Tensor& indices, const Tensor& out) override {
    dispatch([=, this] { gather_rows_now(x, indices, out); });
  }
  void sample(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids) override {
    dispatch([=, this] { sample_now(logits, params, out_ids); });
  }
  void apply_token_mask(const Tensor& logits, const Tensor& mask) override {
    dispatch([=, this] { apply_token_mask_now(logits, mask); });
  }
  void upload_token_mask(const Tensor& mask, const TokenMaskUpload& upload) override {
    dispatch([=, this] { upload_token_mask_now(mask, upload); });
  }
  void raw_logprobs(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out) override {
    dispatch([=, this] { raw_logprobs_now(logits, params, out); });
  }
  void apply_penalties(const Tensor& logits, const SamplingTensors& params,
                       const PenaltyTensors& penalties) override {
    dispatch([=, this] { apply_penalties_now(logits, params, penalties); });
  }
  void sampled_logprobs(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                        const PenaltyTensors& penalties, const LogprobTensors& out) override {
    dispatch([=, this] { sampled_logprobs_now(logits, ids, params, penalties, out); });
  }

 private:
  Communicator& communicator() const {
    FG_CHECK(communicator_ != nullptr, "the cpu backend runs a single rank: it has no tensor-parallel communicator");
    return *communicator_;
  }
  // Runs `op` now, or appends it to the graph being captured.
  void dispatch(std::function<void()> op);

  void embedding_now(const Tensor& ids, const Tensor& table, const Tensor& out);
  void rms_norm_now(const Tensor& x, const Tensor& weight, float eps, const Tensor& out);
  void add_rms_norm_now(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps, const Tensor& out);
  void add_now(const Tensor& residual, const Tensor& x);
  void linear_now(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out);
  void quantize_fp8_now(const Tensor& x, float static_scale, const Fp8Rows& out);
  void linear_fp8_now(const Fp8Rows& x, const Tensor& weight, const Tensor& scale, const Tensor& bias,
                      const Tensor& out);
  void quantize_weight_fp8_now(const Tensor& w, const Tensor& q, const Tensor& scales);
  void head_rms_norm_now(const Tensor& x, const Tensor& weight, float eps);
  void rope_and_cache_write_now(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                                const Tensor& slot_mapping, const Tensor& rope_cos_sin, const KvCacheLayer& cache);
  void attention_now(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                     const Tensor& out);
  void silu_mul_now(const Tensor& gate, const Tensor& up, const Tensor& out);
  void gather_rows_now(const Tensor& x, const Tensor& indices, const Tensor& out);
  void sample_now(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids);
  void apply_token_mask_now(const Tensor& logits, const Tensor& mask);
  void upload_token_mask_now(const Tensor& mask, const TokenMaskUpload& upload);
  void raw_logprobs_now(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out);
  void apply_penalties_now(const Tensor& logits, const SamplingTensors& params, const PenaltyTensors& penalties);
  void sampled_logprobs_now(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                            const PenaltyTensors& penalties, const LogprobTensors& out);

  ThreadPool pool_;
  std::shared_ptr<Communicator> communicator_;
  PaddingContract contract_;  // the defaults of DESIGN.md: the CPU attention needs nothing more
  std::vector<std::function<void()>>* recording_ = nullptr;
  std::unique_ptr<std::vector<std::function<void()>>> capture_;
};

}  // namespace fg
