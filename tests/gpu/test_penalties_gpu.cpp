// tests/gpu/test_penalties_gpu.cpp — the CUDA token-mask, penalty and logprob ops
// (token_mask_kernels.h, penalty_kernels.h, logprob_kernels.h, through CudaBackend) against the CPU
// reference ops (sampling/cpu_token_mask.h, cpu_penalties.h, cpu_logprobs.h), run in a step's
// order: apply_token_mask, raw_logprobs, apply_penalties, sample, sampled_logprobs. About a row in
// three carries a token mask (a structured-output request's), allowing from one token to a quarter
// of the vocabulary; a masked row's token must be one it allows.
//
// Expected bit for bit, by construction (the same per-token float formulas of sampling_math.h;
// integer masses and ranks, so no reduction order matters; -inf written where the mask says): the
// masked and penalized logits, the saved raw
// logits, L_max, Z, the top ids and logprobs, and the sampled token's logprob. Sampled ids follow
// the existing sampler's contract (test_sampling_gpu.cpp): greedy rows identical, sampled rows
// identical in at least 99.9% of rows (all, by construction; the rate is printed). Outputs are
// poisoned before each run, and what rows with num_logprobs = -1 own must stay poisoned. Also: a
// CUDA graph of the four ops captured for padded rows replays equal to an eager launch of the real
// rows.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/thread_pool.h"
#include "gpu/gpu_test_support.h"
#include "runner/step_builder.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/cpu_penalties.h"
#include "sampling/cpu_sampler.h"
#include "sampling/cpu_token_mask.h"
#include "sampling/sampling_params.h"
#include "token_mask_support.h"

namespace fg {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr uint32_t kPoison = 0xFFFFFFFFu;  // what gpu_test::poison leaves in a 32-bit element

// Bit equality, except that any two NaNs are equal: IEEE 754 leaves the bits of a NaN made by an
// invalid operation to the hardware (x86 gives 0xFFC00000, CUDA 0x7FFFFFFF), e.g. the logprob
// (-inf) - (-inf) of a row whose every logit is masked.
bool same_bits(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0; }

// The inputs of one batch, on the host.
struct Batch {
  int64_t rows = 0, vocab = 0, capacity = 0;
  std::vector<float> logits;                 // [rows, vocab], raw
  std::vector<SamplingParams> params;        // [rows]
  std::vector<int32_t> offsets, entries;     // [rows + 1], [capacity, 2]: penalties, then biases
  std::vector<int32_t> bias_offsets;         // [rows + 1]: the logit-bias lists in entries
  std::vector<int32_t> mask;                 // [rows, ceil(vocab / 32)]: all ones where unconstrained
};

// Token masks for the rows of `b`: about a row in three constrained, allowing 1 to vocab / 4 + 1
// tokens; all ones elsewhere. Its own generator, as the logit biases.
void add_token_masks(Batch& b, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t words = token_mask_words(b.vocab);
  b.mask.clear();
  for (int64_t r = 0; r < b.rows; ++r) {
    const std::vector<int32_t> m =
        rng() % 3 == 0 ? test::random_token_mask(rng, b.vocab, 1 + static_cast<int64_t>(rng() % (b.vocab / 4 + 1)))
                       : std::vector<int32_t>(static_cast<size_t>(words), -1);
    b.mask.insert(b.mask.end(), m.begin(), m.end());
  }
}

// Logit-bias lists for the rows of `b` after its penalty entries in `used`: about a row in three,
// up to 12 distinct tokens each, half of them from the row's penalty list (so that a token biased
// and penalized shows the order), biases anywhere in [-100, 100]. Its own generator, so that the
// rest of the batch draws what it drew before biases existed.
void add_logit_bias(Batch& b, std::vector<int32_t>& used, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-kMaxAbsLogitBias, kMaxAbsLogitBias);
  b.bias_offsets.push_back(static_cast<int32_t>(used.size() / 2));
  for (int64_t r = 0; r < b.rows; ++r) {
    std::set<int32_t> tokens;
    if (rng() % 3 == 0) {
      const int n = 1 + static_cast<int>(rng() % 12);
      for (int i = 0; i < n; ++i) {
        const int32_t first = b.offsets[r], last = b.offsets[r + 1];
        const bool listed = i % 2 == 0 && last > first;
        tokens.insert(listed ? used[2 * (first + static_cast<int32_t>(rng() % (last - first)))]
                             : static_cast<int32_t>(rng() % b.vocab));
      }
    }
    for (int32_t t : tokens) {
      used.push_back(t);
      used.push_back(std::bit_cast<int32_t>(value(rng)));
    }
    b.bias_offsets.push_back(static_cast<int32_t>(used.size() / 2));
  }
}

// Logits like a model's (as test_sampling_gpu.cpp makes them), mixed sampling settings with
// penalties on about two rows in three, logprob counts from -1 to 20, and penalty lists built by
// the runner's builder from random prompts and outputs. `capacity` >= the entries used: the rest
// is garbage that must never be read.
Batch random_batch(int64_t rows, int64_t vocab, std::mt19937& rng, int64_t spare = 17) {
  Batch b;
  b.rows = rows;
  b.vocab = vocab;
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  b.logits.resize(static_cast<size_t>(rows * vocab));
  for (int64_t r = 0; r < rows; ++r) {
    float* row = b.logits.data() + r * vocab;
    const float scale = 0.5f + 4.0f * uniform(rng);
    const bool ties = uniform(rng) < 0.3f;
    for (int64_t i = 0; i < vocab; ++i) {
      float v = scale * normal(rng);
      row[i] = ties ? std::round(v * 8.0f) / 8.0f : v;
    }
    if (uniform(rng) < 0.2f)
      for (int64_t i = 0; i < vocab; i += 3) row[i] = -kInf;
  }
  std::uniform_int_distribution<int> pick(0, 99);
  const int32_t counts[] = {-1, -1, 0, 1, 5, 20};
  PenaltyListBuilder builder;
  std::vector<int32_t> used;
  b.offsets.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    SamplingParams p;
    if (pick(rng) >= 30) {
      p.temperature = 0.2f + static_cast<float>(pick(rng)) / 60.0f;
      p.top_k = pick(rng) < 50 ? 0 : 1 + pick(rng);
      p.top_p = pick(rng) < 50 ? 1.0f : 0.9f;
      p.min_p = pick(rng) < 70 ? 0.0f : 0.05f;
    }
    p.seed = static_cast<int64_t>((static_cast<uint64_t>(rng()) << 32) | rng());
    p.step = rng() % 100000;
    const int k = pick(rng);
    if (k < 40) p.repetition_penalty = 0.3f + static_cast<float>(pick(rng)) / 40.0f;
    if (k >= 25 && k < 55) p.presence_penalty = static_cast<float>(pick(rng)) / 25.0f - 2.0f;
    if (k >= 45 && k < 70) p.frequency_penalty = static_cast<float>(pick(rng)) / 25.0f - 2.0f;
    p.num_logprobs = counts[pick(rng) % 6];
    b.params.push_back(p);
    if (p.has_penalties()) {
      std::vector<int32_t> prompt, output;
      std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(vocab) - 1);
      for (int i = pick(rng) * 3; i > 0; --i) prompt.push_back(id(rng));
      const int32_t base = id(rng);
      for (int i = pick(rng); i > 0; --i) output.push_back(static_cast<int32_t>((base + rng() % 40) % vocab));
      const int64_t n = builder.collect(prompt, output, p.repetition_penalty != 1.0f, r);
      const size_t at = used.size();
      used.resize(at + 2 * static_cast<size_t>(n));
      builder.write(used.data() + at);
    }
    b.offsets.push_back(static_cast<int32_t>(used.size() / 2));
  }
  add_logit_bias(b, used, static_cast<uint32_t>(rows * 7919 + vocab));
  add_token_masks(b, static_cast<uint32_t>(rows * 104729 + vocab));
  b.capacity = static_cast<int64_t>(used.size() / 2) + spare;
  b.entries = used;
  b.entries.resize(static_cast<size_t>(2 * b.capacity), 7);  // unused entries: a valid-looking token
  return b;
}

// Host tensors and outputs of the CPU reference, run in the step's order.
struct CpuRun {
  std::vector<float> logits, original, logit_max, top_logprobs, sampled;
  std::vector<int64_t> mass;
  std::vector<int32_t> top_ids, ids;
};

CpuRun run_cpu(const Batch& b, ThreadPool& pool) {
  CpuRun o;
  o.logits = b.logits;
  o.original.assign(static_cast<size_t>(b.capacity), std::nanf(""));
  o.logit_max.assign(b.rows, std::nanf(""));
  o.mass.assign(b.rows, -1);
  o.top_ids.assign(b.rows * kMaxLogprobs, -1);
  o.top_logprobs.assign(b.rows * kMaxLogprobs, std::nanf(""));
  o.sampled.assign(b.rows, std::nanf(""));
  o.ids.assign(b.rows, -1);
  HostSamplingBuffers host(b.rows);
  for (int64_t r = 0; r < b.rows; ++r) host.set(r, b.params[r]);
  std::vector<int32_t> offsets = b.offsets, entries = b.entries, bias_offsets = b.bias_offsets;
  const Tensor logits(o.logits.data(), DType::kF32, {b.rows, b.vocab});
  const PenaltyTensors lists{Tensor(offsets.data(), DType::kI32, {b.rows + 1}),
                             Tensor(entries.data(), DType::kI32, {b.capacity, 2}),
                             Tensor(o.original.data(), DType::kF32, {b.capacity}),
                             Tensor(bias_offsets.data(), DType::kI32, {b.rows + 1})};
  LogprobTensors out;
  out.logit_max = Tensor(o.logit_max.data(), DType::kF32, {b.rows});
  out.mass = Tensor(o.mass.data(), DType::kI64, {b.rows});
  out.top_ids = Tensor(o.top_ids.data(), DType::kI32, {b.rows, kMaxLogprobs});
  out.top_logprobs = Tensor(o.top_logprobs.data(), DType::kF32, {b.rows, kMaxLogprobs});
  out.sampled = Tensor(o.sampled.data(), DType::kF32, {b.rows});
  const Tensor ids(o.ids.data(), DType::kI32, {b.rows});
  std::vector<int32_t> mask = b.mask;
  apply_token_mask_cpu(logits, Tensor(mask.data(), DType::kI32, {b.rows, token_mask_words(b.vocab)}), &pool);
  raw_logprobs_cpu(logits, host.tensors(), out, &pool);
  apply_penalties_cpu(logits, host.tensors(), lists, &pool);
  sample_cpu(logits, host.tensors(), ids, &pool);
  sampled_logprobs_cpu(logits, ids, host.tensors(), lists, out, &pool);
  return o;
}

// Device copies of a batch's inputs and poisoned outputs, `padded` >= rows rows (rows past the
// batch: zero logits, neutral parameters, empty lists), allocated through the backend.
struct DeviceRun {
  CudaBackend& gpu;
  int64_t padded;
  std::vector<std::shared_ptr<void>> keep;
  Tensor logits, ids, offsets, entries, original, bias_offsets, mask;
  SamplingTensors params;
  LogprobTensors out;

  DeviceRun(CudaBackend& g, int64_t padded_rows, int64_t vocab, int64_t capacity) : gpu(g), padded(padded_rows) {
    logits = alloc(DType::kF32, {padded, vocab});
    ids = alloc(DType::kI32, {padded});
    offsets = alloc(DType::kI32, {padded + 1});
    bias_offsets = alloc(DType::kI32, {padded + 1});
    entries = alloc(DType::kI32, {capacity, 2});
    original = alloc(DType::kF32, {capacity});
    mask = alloc(DType::kI32, {padded, token_mask_words(vocab)});
    params.temperature = alloc(DType::kF32, {padded});
    params.top_k = alloc(DType::kI32, {padded});
    params.top_p = alloc(DType::kF32, {padded});
    params.min_p = alloc(DType::kF32, {padded});
    params.seed = alloc(DType::kI64, {padded});
    params.step = alloc(DType::kI64, {padded});
    params.repetition_penalty = alloc(DType::kF32, {padded});
    params.presence_penalty = alloc(DType::kF32, {padded});
    params.frequency_penalty = alloc(DType::kF32, {padded});
    params.num_logprobs = alloc(DType::kI32, {padded});
    out.logit_max = alloc(DType::kF32, {padded});
    out.mass = alloc(DType::kI64, {padded});
    out.top_ids = alloc(DType::kI32, {padded, kMaxLogprobs});
    out.top_logprobs = alloc(DType::kF32, {padded, kMaxLogprobs});
    out.sampled = alloc(DType::kF32, {padded});
  }

  Tensor alloc(DType dtype, std::initializer_list<int64_t> dims) {
    Allocation a = gpu.allocate(dtype, dims);
    keep.push_back(a.memory);
    return a.tensor;
  }

  void upload(const Batch& b) {
    std::vector<float> host_logits(static_cast<size_t>(padded * b.vocab), 0.0f);
    std::copy(b.logits.begin(), b.logits.end(), host_logits.begin());
    gpu_test::upload(logits, host_logits);
    std::vector<int32_t> host_offsets(static_cast<size_t>(padded + 1), b.offsets.back());
    std::copy(b.offsets.begin(), b.offsets.end(), host_offsets.begin());
    gpu_test::upload(offsets, host_offsets);
    std::vector<int32_t> host_bias(static_cast<size_t>(padded + 1), b.bias_offsets.back());
    std::copy(b.bias_offsets.begin(), b.bias_offsets.end(), host_bias.begin());
    gpu_test::upload(bias_offsets, host_bias);
    gpu_test::upload(entries, b.entries);
    std::vector<int32_t> host_mask(static_cast<size_t>(padded * token_mask_words(b.vocab)), -1);  // padded: all ones
    std::copy(b.mask.begin(), b.mask.end(), host_mask.begin());
    gpu_test::upload(mask, host_mask);
    HostSamplingBuffers host(padded);  // padded rows neutral
    for (int64_t r = 0; r < b.rows; ++r) host.set(r, b.params[r]);
    const SamplingTensors& h = host.tensors();
    for (const auto& [dst, src] : {std::pair{&params.temperature, &h.temperature}, {&params.top_k, &h.top_k},
                                   {&params.top_p, &h.top_p}, {&params.min_p, &h.min_p}, {&params.seed, &h.seed},
                                   {&params.step, &h.step}, {&params.repetition_penalty, &h.repetition_penalty},
                                   {&params.presence_penalty, &h.presence_penalty},
                                   {&params.frequency_penalty, &h.frequency_penalty},
                                   {&params.num_logprobs, &h.num_logprobs}})
      FG_CUDA_CHECK(cudaMemcpy(dst->data, src->data, src->nbytes(), cudaMemcpyHostToDevice));
  }

  void poison_outputs() {
    for (const Tensor* t : {&ids, &original, &out.logit_max, &out.mass, &out.top_ids, &out.top_logprobs,
                            &out.sampled})
      gpu_test::poison(*t);
  }

  // The five ops of a step over the first `rows` rows.
  void enqueue(int64_t rows) {
    const Tensor l = logits.rows(0, rows), i = ids.rows(0, rows);
    const PenaltyTensors lists{offsets.rows(0, rows + 1), entries, original, bias_offsets.rows(0, rows + 1)};
    LogprobTensors o = out;
    o.logit_max = out.logit_max.rows(0, rows);
    o.mass = out.mass.rows(0, rows);
    o.top_ids = out.top_ids.rows(0, rows);
    o.top_logprobs = out.top_logprobs.rows(0, rows);
    o.sampled = out.sampled.rows(0, rows);
    gpu.apply_token_mask(l, mask.rows(0, rows));
    gpu.raw_logprobs(l, params, o);
    gpu.apply_penalties(l, params, lists);
    gpu.sample(l, params, i);
    gpu.sampled_logprobs(l, i, params, lists, o);
  }

  CpuRun download(int64_t rows, int64_t vocab) {
    gpu.synchronize();
    CpuRun o;
    o.logits = gpu_test::download<float>(logits.rows(0, rows));
    o.original = gpu_test::download<float>(original);
    o.logit_max = gpu_test::download<float>(out.logit_max.rows(0, rows));
    o.mass = gpu_test::download<int64_t>(out.mass.rows(0, rows));
    o.top_ids = gpu_test::download<int32_t>(out.top_ids.rows(0, rows));
    o.top_logprobs = gpu_test::download<float>(out.top_logprobs.rows(0, rows));
    o.sampled = gpu_test::download<float>(out.sampled.rows(0, rows));
    o.ids = gpu_test::download<int32_t>(ids.rows(0, rows));
    (void)vocab;
    return o;
  }
};

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Compares a GPU run with the CPU reference; returns (sampled rows, identical sampled rows).
std::pair<int64_t, int64_t> expect_same(const Batch& b, const CpuRun& gpu, const CpuRun& cpu, const std::string& what) {
  EXPECT_EQ(std::memcmp(gpu.logits.data(), cpu.logits.data(), cpu.logits.size() * 4), 0)
      << what << ": penalized logits differ";
  for (int64_t e = 0; e < b.bias_offsets[b.rows]; ++e)
    EXPECT_TRUE(same_bits(gpu.original[e], cpu.original[e])) << what << ": saved raw logit of entry " << e;
  for (int64_t e = b.bias_offsets[b.rows]; e < b.capacity; ++e)
    EXPECT_EQ(bits(gpu.original[e]), kPoison) << what << ": entry " << e << " past the lists was written";
  int64_t sampled = 0, same = 0;
  for (int64_t r = 0; r < b.rows; ++r) {
    const SamplingParams& p = b.params[r];
    const int32_t n = p.num_logprobs;
    if (n < 0) {
      EXPECT_EQ(bits(gpu.logit_max[r]), kPoison) << what << " row " << r << " wants no logprobs";
      EXPECT_EQ(static_cast<uint64_t>(gpu.mass[r]), ~uint64_t{0}) << what << " row " << r;
      EXPECT_EQ(bits(gpu.sampled[r]), kPoison) << what << " row " << r;
    } else {
      EXPECT_TRUE(same_bits(gpu.logit_max[r], cpu.logit_max[r])) << what << " L_max of row " << r;
      EXPECT_EQ(gpu.mass[r], cpu.mass[r]) << what << " Z of row " << r;
    }
    for (int64_t k = 0; k < kMaxLogprobs; ++k) {
      const int64_t at = r * kMaxLogprobs + k;
      if (k < std::min<int64_t>(n, b.vocab)) {
        EXPECT_EQ(gpu.top_ids[at], cpu.top_ids[at]) << what << " row " << r << " rank " << k;
        EXPECT_TRUE(same_bits(gpu.top_logprobs[at], cpu.top_logprobs[at])) << what << " row " << r << " rank " << k;
      } else {
        EXPECT_EQ(static_cast<uint32_t>(gpu.top_ids[at]), kPoison) << what << " row " << r << " rank " << k;
      }
    }
    if (p.temperature == 0.0f) {
      EXPECT_EQ(gpu.ids[r], cpu.ids[r]) << what << " greedy row " << r;
    } else {
      ++sampled;
      same += gpu.ids[r] == cpu.ids[r];
      if (gpu.ids[r] != cpu.ids[r])
        std::printf("%s row %lld: gpu %d cpu %d\n", what.c_str(), static_cast<long long>(r), gpu.ids[r], cpu.ids[r]);
    }
    if (n >= 0 && gpu.ids[r] == cpu.ids[r]) {
      EXPECT_TRUE(same_bits(gpu.sampled[r], cpu.sampled[r])) << what << " sampled logprob of row " << r;
    }
    // A masked row whose allowed tokens are not all -inf samples one of them.
    const int64_t words = token_mask_words(b.vocab);
    const std::vector<int32_t> m(b.mask.begin() + r * words, b.mask.begin() + (r + 1) * words);
    const std::vector<float> masked = test::masked_row(b.logits.data() + r * b.vocab, b.vocab, m);
    if (std::any_of(masked.begin(), masked.end(), [](float x) { return std::isfinite(x); })) {
      EXPECT_TRUE(test::mask_allows(m, gpu.ids[r])) << what << " row " << r << " sampled " << gpu.ids[r];
    }
  }
  return {sampled, same};
}

TEST(CudaPenaltiesLogprobs, OpsMatchTheCpuReferenceBitForBit) {
  FG_REQUIRE_GPU();
  CudaBackend gpu(0);
  ThreadPool pool(0);
  std::mt19937 rng(404);
  int64_t sampled = 0, same = 0;
  for (int64_t vocab : {1, 7, 320, 2049, 32000, 32001, 128256, 152064}) {
    for (int64_t rows : {1, 7, 64}) {
      if (vocab > 100000 && rows > 7) continue;
      const Batch b = random_batch(rows, vocab, rng);
      DeviceRun d(gpu, rows, vocab, b.capacity);
      d.upload(b);
      d.poison_outputs();
      d.enqueue(rows);
      const CpuRun got = d.download(rows, vocab);
      const auto [s, m] = expect_same(b, got, run_cpu(b, pool),
                                      "vocab " + std::to_string(vocab) + " rows " + std::to_string(rows));
      sampled += s;
      same += m;
    }
  }
  const double rate = sampled ? static_cast<double>(same) / sampled : 1.0;
  std::printf("CudaPenaltiesLogprobs: %lld of %lld sampled rows identical to the CPU (%.5f%%)\n",
              static_cast<long long>(same), static_cast<long long>(sampled), 100.0 * rate);
  EXPECT_GE(rate, 0.999);
}

// A graph of the five ops captured for 16 rows; each replay with 11 real rows (5 padded: zero
// logits, neutral parameters, empty lists, all-ones masks) equals an eager launch of the 11 real
// rows, masked rows among them.
TEST(CudaPenaltiesLogprobs, GraphWithPaddedRowsEqualsEager) {
  FG_REQUIRE_GPU();
  constexpr int64_t kVocab = 32000, kReal = 11, kPadded = 16, kCapacity = 30000;
  CudaBackend gpu(0);
  DeviceRun d(gpu, kPadded, kVocab, kCapacity);
  d.poison_outputs();
  gpu.begin_capture();
  d.enqueue(kPadded);
  std::unique_ptr<Graph> graph = gpu.end_capture();
  std::mt19937 rng(5);
  for (int replay = 0; replay < 3; ++replay) {
    Batch b = random_batch(kReal, kVocab, rng, 0);
    ASSERT_LE(b.capacity, kCapacity);
    b.entries.resize(2 * kCapacity, 7);
    b.capacity = kCapacity;
    d.upload(b);
    d.poison_outputs();
    graph->replay();
    const CpuRun from_graph = d.download(kReal, kVocab);
    const std::vector<int32_t> padded_ids = gpu_test::download<int32_t>(d.ids);
    for (int64_t r = kReal; r < kPadded; ++r) EXPECT_EQ(padded_ids[r], 0) << "padded row " << r;  // argmax of zeros
    d.upload(b);  // the penalties changed the logits in place
    d.poison_outputs();
    d.enqueue(kReal);
    const CpuRun eager = d.download(kReal, kVocab);
    const std::string what = "replay " + std::to_string(replay);
    EXPECT_EQ(from_graph.ids, eager.ids) << what;
    EXPECT_EQ(std::memcmp(from_graph.logits.data(), eager.logits.data(), eager.logits.size() * 4), 0) << what;
    EXPECT_EQ(std::memcmp(from_graph.original.data(), eager.original.data(), eager.original.size() * 4), 0) << what;
    for (const auto& [g, e] : {std::pair{&from_graph.logit_max, &eager.logit_max},
                               {&from_graph.sampled, &eager.sampled},
                               {&from_graph.top_logprobs, &eager.top_logprobs}})
      EXPECT_EQ(std::memcmp(g->data(), e->data(), e->size() * 4), 0) << what;
    EXPECT_EQ(from_graph.top_ids, eager.top_ids) << what;
    EXPECT_EQ(from_graph.mass, eager.mass) << what;
  }
}

}  // namespace
}  // namespace fg
