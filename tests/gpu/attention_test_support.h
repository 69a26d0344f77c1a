// tests/gpu/attention_test_support.h — what the GPU attention tests share
// (test_attention_flash.cpp, test_attention_split_kv.cpp, test_attention_auto.cpp): a step of
// paged attention on the host (metadata, q, the KV cache, the owner of each query row), its copy on
// the device, the CPU backend's fp32 attention as the oracle, and the checks every backend passes:
// matches the CPU, leaves rows owned by no request poisoned, graph replays with new metadata equal
// fresh eager runs bit for bit, a request's output does not depend on its batch, and the step's
// own KV rows are read only after the kernel that writes them has finished.
//
// Data: q and the KV cache hold random bf16-representable values; the CPU computes in fp32 on the
// same values. Each request's KV blocks are a random permutation of the cache's blocks; the null
// block 0, the slots past each request's context and the spare blocks hold NaN, so a kernel that
// reads a slot it should not shows NaN. Outputs are poisoned (NaN) before every run.
//
// A config with fp8_kv keeps the cache in e4m3 (--kv-cache-dtype fp8): the bytes are the random
// values divided by the config's scales and rounded to e4m3 (NaN where poisoned), and the CPU reads
// the same bytes through its own FP8 cache path (e4m3 * scale in fp32), so both sides attend over
// identical keys and values and the bf16 tolerance still holds.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention/cuda/attention_backend.h"
#include "backend/cpu/cpu_backend.h"
#include "gpu/gpu_test_support.h"
#include "gpu/late_copy_kernels.h"

namespace fg::gpu_test::attention_test {

constexpr uint16_t kPoisonBits = 0xFFFF;  // what poison() leaves in a bf16
constexpr double kTolerance = 1e-2;       // see gpu_test_support.h

struct Config {
  int head_dim = 128;
  int num_kv_heads = 2;
  int group = 1;  // query heads per KV head
  int block_size = 16;
  bool fp8_kv = false;
  float k_scale = 1.0f, v_scale = 1.0f;  // e4m3 caches only
  int num_heads() const { return num_kv_heads * group; }
  int width() const { return num_heads() * head_dim; }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }
  std::string label() const {
    return "hd " + std::to_string(head_dim) + ", G " + std::to_string(group) + ", block " + std::to_string(block_size) +
           (fp8_kv ? ", fp8 KV (scales " + std::to_string(k_scale) + ", " + std::to_string(v_scale) + ")" : "");
  }
};

inline AttentionLimits limits_for(const Config& c) {
  AttentionLimits l;
  l.max_tokens = 2048;
  l.max_reqs = 64;
  l.max_context = 32768;
  l.num_heads = c.num_heads();
  l.num_kv_heads = c.num_kv_heads;
  l.head_dim = c.head_dim;
  l.block_size = c.block_size;
  return l;
}

struct Req {
  int query_len;  // tokens of this step
  int context;    // seq_len: context after this step, the step's tokens included
};

// One step on the host: metadata, q and the KV cache, with the owner of each query row.
struct Step {
  Config cfg;
  int n = 0, reqs = 0, reqs_real = 0, max_blocks = 0, num_blocks = 0;
  std::vector<int32_t> qsl, seq_lens, table;  // [reqs + 1], [reqs], [reqs, max_blocks]
  std::vector<int> owner;                     // [n]: request of each query row, -1 for none
  Bf16Values q, k, v;                         // q [n, nh * hd]; k, v [num_blocks, bs, nkv, hd]
  std::vector<uint8_t> k8, v8;                // cfg.fp8_kv: the cache's e4m3 bytes (k and v are then unused)
  int uniform_query_len = 0;                  // every real request's query length, or 0 if they differ
};

inline int blocks_for(int context, int block_size) { return (context + block_size - 1) / block_size; }

// Real requests `real`, padded to `reqs_padded` requests and `n_padded` query rows per the
// contract (query_start_loc repeats its last value, seq_lens 0, block_table rows 0). max_blocks and
// num_blocks of 0 mean "just enough"; pass them to give two steps the same shapes.
inline Step make_step(const Config& cfg, const std::vector<Req>& real, std::mt19937& rng, int reqs_padded = 0,
                      int n_padded = 0, int max_blocks = 0, int num_blocks = 0) {
  Step s;
  s.cfg = cfg;
  s.reqs_real = static_cast<int>(real.size());
  s.uniform_query_len = real.empty() ? 0 : real[0].query_len;
  for (const Req& r : real)
    if (r.query_len != s.uniform_query_len) s.uniform_query_len = 0;
  s.reqs = std::max(reqs_padded, s.reqs_real);
  int tokens = 0, blocks_needed = 0, widest = 1;
  for (const Req& r : real) {
    tokens += r.query_len;
    blocks_needed += blocks_for(r.context, cfg.block_size);
    widest = std::max(widest, blocks_for(r.context, cfg.block_size));
  }
  s.n = std::max(n_padded, tokens);
  s.max_blocks = std::max(max_blocks, widest);
  s.num_blocks = std::max(num_blocks, 1 + blocks_needed + 3);  // null block + spares

  s.qsl.assign(s.reqs + 1, tokens);
  s.seq_lens.assign(s.reqs, 0);
  s.table.assign(static_cast<size_t>(s.reqs) * s.max_blocks, 0);
  s.owner.assign(s.n, -1);
  std::vector<int32_t> ids(s.num_blocks - 1);
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), rng);
  const size_t slot_elems = static_cast<size_t>(cfg.num_kv_heads) * cfg.head_dim;
  const size_t cache_elems = static_cast<size_t>(s.num_blocks) * cfg.block_size * slot_elems;
  s.q = random_bf16(static_cast<size_t>(s.n) * cfg.width(), rng);
  s.k = random_bf16(cache_elems, rng);
  s.v = random_bf16(cache_elems, rng);
  std::vector<bool> slot_used(static_cast<size_t>(s.num_blocks) * cfg.block_size, false);
  int offset = 0;
  size_t next_id = 0;
  for (int r = 0; r < s.reqs_real; ++r) {
    s.qsl[r] = offset;
    s.seq_lens[r] = real[r].context;
    for (int t = 0; t < real[r].query_len; ++t) s.owner[offset + t] = r;
    offset += real[r].query_len;
    for (int b = 0; b < blocks_for(real[r].context, cfg.block_size); ++b) {
      const int id = ids.at(next_id++);
      s.table[static_cast<size_t>(r) * s.max_blocks + b] = id;
      for (int o = 0; o < cfg.block_size && b * cfg.block_size + o < real[r].context; ++o)
        slot_used[static_cast<size_t>(id) * cfg.block_size + o] = true;
    }
  }
  // Slots no request owns (the null block, tails of last blocks, spares) hold NaN.
  for (size_t slot = 0; slot < slot_used.size(); ++slot) {
    if (slot_used[slot]) continue;
    for (size_t e = slot * slot_elems; e < (slot + 1) * slot_elems; ++e) {
      s.k.bits[e] = s.v.bits[e] = kPoisonBits;
      s.k.values[e] = s.v.values[e] = NAN;
    }
  }
  if (cfg.fp8_kv) {
    s.k8.resize(cache_elems);
    s.v8.resize(cache_elems);
    for (size_t e = 0; e < cache_elems; ++e) {
      s.k8[e] = float_to_e4m3(s.k.values[e] / cfg.k_scale);  // NaN stays NaN (0x7f)
      s.v8[e] = float_to_e4m3(s.v.values[e] / cfg.v_scale);
    }
  }
  return s;
}

struct DeviceStep {
  DeviceBuffer q, k, v, qsl, seq_lens, table, out;
  float k_scale = 1.0f, v_scale = 1.0f;
  KvCacheLayer cache() const { return {k.tensor, v.tensor, k_scale, v_scale}; }
  AttentionMetadata meta(int uniform_query_len) const {
    return {qsl.tensor, seq_lens.tensor, table.tensor, uniform_query_len};
  }
};

inline DeviceStep alloc_step(const Step& s) {
  const Config& c = s.cfg;
  DeviceStep d;
  d.q = device_alloc(DType::kBF16, {s.n, c.width()});
  d.out = device_alloc(DType::kBF16, {s.n, c.width()});
  const DType kv_dtype = c.fp8_kv ? DType::kF8E4M3 : DType::kBF16;
  d.k = device_alloc(kv_dtype, {s.num_blocks, c.block_size, c.num_kv_heads, c.head_dim});
  d.v = device_alloc(kv_dtype, {s.num_blocks, c.block_size, c.num_kv_heads, c.head_dim});
  if (c.fp8_kv) {
    d.k_scale = c.k_scale;
    d.v_scale = c.v_scale;
  }
  d.qsl = device_alloc(DType::kI32, {s.reqs + 1});
  d.seq_lens = device_alloc(DType::kI32, {s.reqs});
  d.table = device_alloc(DType::kI32, {s.reqs, s.max_blocks});
  return d;
}

// Writes a step's contents into buffers of the same shapes (e.g. those a graph was captured on).
inline void upload_step(const Step& s, const DeviceStep& d) {
  upload(d.q.tensor, s.q.bits);
  if (s.cfg.fp8_kv) {
    upload(d.k.tensor, s.k8);
    upload(d.v.tensor, s.v8);
  } else {
    upload(d.k.tensor, s.k.bits);
    upload(d.v.tensor, s.v.bits);
  }
  upload(d.qsl.tensor, s.qsl);
  upload(d.seq_lens.tensor, s.seq_lens);
  upload(d.table.tensor, s.table);
}

inline DeviceStep to_device(const Step& s) {
  DeviceStep d = alloc_step(s);
  upload_step(s, d);
  return d;
}

// Poisons the output, runs eagerly on the default stream, returns the output bits.
inline std::vector<uint16_t> run_gpu(AttentionBackend& backend, const Step& s, const DeviceStep& d) {
  poison(d.out.tensor);
  backend.run(d.q.tensor, d.cache(), d.meta(s.uniform_query_len), s.cfg.scale(), d.out.tensor, nullptr);
  FG_CUDA_CHECK(cudaGetLastError());
  return download<uint16_t>(d.out.tensor);
}

inline std::vector<float> run_cpu(const Step& s) {
  CpuBackend cpu;
  const Config& c = s.cfg;
  auto host = [](const std::vector<float>& v, DType dtype, std::initializer_list<int64_t> dims) {
    return Tensor(const_cast<float*>(v.data()), dtype, dims);
  };
  auto host_i32 = [](const std::vector<int32_t>& v, std::initializer_list<int64_t> dims) {
    return Tensor(const_cast<int32_t*>(v.data()), DType::kI32, dims);
  };
  std::vector<float> out(static_cast<size_t>(s.n) * c.width(), NAN);
  const KvCacheLayer cache =
      c.fp8_kv ? KvCacheLayer{Tensor(const_cast<uint8_t*>(s.k8.data()), DType::kF8E4M3,
                                     {s.num_blocks, c.block_size, c.num_kv_heads, c.head_dim}),
                              Tensor(const_cast<uint8_t*>(s.v8.data()), DType::kF8E4M3,
                                     {s.num_blocks, c.block_size, c.num_kv_heads, c.head_dim}),
                              c.k_scale, c.v_scale}
               : KvCacheLayer{host(s.k.values, DType::kF32, {s.num_blocks, c.block_size, c.num_kv_heads, c.head_dim}),
                              host(s.v.values, DType::kF32, {s.num_blocks, c.block_size, c.num_kv_heads, c.head_dim})};
  const AttentionMetadata meta{host_i32(s.qsl, {s.reqs + 1}), host_i32(s.seq_lens, {s.reqs}),
                               host_i32(s.table, {s.reqs, s.max_blocks})};
  cpu.attention(host(s.q.values, DType::kF32, {s.n, c.width()}), cache, meta, c.scale(),
                Tensor(out.data(), DType::kF32, {s.n, static_cast<int64_t>(c.width())}));
  return out;
}

// Per real request: ||gpu - cpu|| / ||cpu|| over its rows. Rows owned by no request: still poison.
inline void expect_matches_cpu(const Step& s, const std::vector<uint16_t>& gpu, const std::vector<float>& ref) {
  const size_t w = s.cfg.width();
  ASSERT_EQ(gpu.size(), static_cast<size_t>(s.n) * w);
  for (int r = 0; r < s.reqs_real; ++r) {
    std::vector<float> got, want;
    for (size_t e = s.qsl[r] * w; e < s.qsl[r + 1] * w; ++e) {
      got.push_back(bf16_to_float(gpu[e]));
      want.push_back(ref[e]);
    }
    EXPECT_LE(relative_error(got, want), kTolerance)
        << s.cfg.label() << ": request " << r << " (" << s.qsl[r + 1] - s.qsl[r] << " query tokens, context "
        << s.seq_lens[r] << ")";
  }
  size_t written = 0;
  for (int row = 0; row < s.n; ++row)
    if (s.owner[row] < 0)
      for (size_t e = row * w; e < (row + 1) * w; ++e) written += gpu[e] != kPoisonBits;
  EXPECT_EQ(written, 0u) << s.cfg.label() << ": elements of rows owned by no request were written";
}

// Step s on a fresh `backend` attention backend sized for cfg, checked against the CPU oracle
// (expect_matches_cpu).
inline void expect_backend_matches_cpu(const char* backend, const Config& cfg, const Step& s) {
  auto attention = make_attention_backend(backend, limits_for(cfg));
  expect_matches_cpu(s, run_gpu(*attention, s, to_device(s)), run_cpu(s));
}

// expect_backend_matches_cpu for one batch under every config of `configs`, the steps' random
// numbers drawn in config order from one generator seeded with `seed`; padded as make_step pads.
inline void expect_backend_matches_cpu_over(const char* backend, const std::vector<Config>& configs,
                                            const std::vector<Req>& batch, uint32_t seed, int reqs_padded = 0,
                                            int n_padded = 0) {
  std::mt19937 rng(seed);
  for (const Config& cfg : configs)
    expect_backend_matches_cpu(backend, cfg, make_step(cfg, batch, rng, reqs_padded, n_padded));
}

// Bitwise comparison of the rows of request r in two outputs (possibly of different batches).
inline size_t differing_elements(const Step& a, const std::vector<uint16_t>& out_a, int ra, const Step& b,
                                 const std::vector<uint16_t>& out_b, int rb) {
  const size_t w = a.cfg.width();
  const size_t len = (a.qsl[ra + 1] - a.qsl[ra]) * w;
  EXPECT_EQ(len, (b.qsl[rb + 1] - b.qsl[rb]) * w);
  size_t diff = 0;
  for (size_t e = 0; e < len; ++e) diff += out_a[a.qsl[ra] * w + e] != out_b[b.qsl[rb] * w + e];
  return diff;
}

// hd 128, GQA 4 on KV blocks larger than 16 positions.
inline std::vector<Config> larger_block_configs() {
  return {Config{128, 2, 4, 32}, Config{128, 2, 4, 48}, Config{128, 2, 4, 256}};
}

inline std::vector<Config> all_configs(int block_size = 16) {
  std::vector<Config> configs;
  for (int hd : {64, 128})
    for (int g : {1, 4, 8}) configs.push_back({hd, 2, g, block_size});
  return configs;
}

// Prefill chunks of 1..300 tokens on top of existing context, interleaved with decodes whose
// contexts cross block (16) and tile (64) boundaries.
inline std::vector<Req> mixed_batch() {
  return {{1, 1},    {300, 300}, {1, 15},   {17, 1000}, {1, 16},   {1, 17},    {64, 129},
          {1, 63},   {1, 64},    {2, 2},    {1, 65},    {1, 127},  {40, 4096}, {1, 128},
          {1, 129},  {65, 65},   {1, 1000}, {5, 16},    {1, 4096}, {128, 128}, {129, 200}};
}

inline const std::vector<int> kDecodeContexts = {1,   15,  16,  17,  63,   64,   65,    127,  128,
                                                 129, 255, 256, 257, 1000, 4096, 10000, 20000};

inline std::vector<Req> uniform_batch(int query_len, const std::vector<int>& contexts) {
  std::vector<Req> reqs;
  for (int c : contexts)
    if (c >= query_len) reqs.push_back({query_len, c});
  return reqs;
}

// A CUDA graph of one run() on `stream`, with the launch parameters of d's shapes frozen.
struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

inline void capture(Graph& g, AttentionBackend& backend, const Step& s, const DeviceStep& d,
                    cudaStream_t stream) {
  FG_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  backend.run(d.q.tensor, d.cache(), d.meta(s.uniform_query_len), s.cfg.scale(), d.out.tensor, stream);
  FG_CUDA_CHECK(cudaStreamEndCapture(stream, &g.graph));
  FG_CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
}

inline std::vector<uint16_t> replay(const Graph& g, const DeviceStep& d, cudaStream_t stream) {
  FG_CUDA_CHECK(cudaMemsetAsync(d.out.tensor.data, 0xFF, d.out.tensor.nbytes(), stream));
  FG_CUDA_CHECK(cudaGraphLaunch(g.exec, stream));
  FG_CUDA_CHECK(cudaStreamSynchronize(stream));
  return download<uint16_t>(d.out.tensor);
}

// The step `s` without its padding: real requests and rows only, as an eager run sees it.
inline Step unpadded(const Step& s) {
  Step u = s;
  u.reqs = s.reqs_real;
  u.n = s.qsl[s.reqs_real];
  u.qsl.resize(u.reqs + 1);
  u.seq_lens.resize(u.reqs);
  u.table.resize(static_cast<size_t>(u.reqs) * u.max_blocks);
  u.owner.resize(u.n);
  u.q.bits.resize(static_cast<size_t>(u.n) * s.cfg.width());
  u.q.values.resize(u.q.bits.size());
  return u;
}

// Runs the graph-replay check for one backend: two batches with the same padded shapes replayed
// through one captured graph must equal fresh, unpadded eager runs bit for bit (DESIGN.md point 7)
// and the CPU within tolerance, with unowned rows untouched.
inline void check_replay_with_new_metadata(const std::string& name, const Config& cfg,
                                           const std::vector<Req>& batch_a, const std::vector<Req>& batch_b,
                                           int reqs_padded, int n_padded) {
  std::mt19937 rng(7);
  int max_blocks = 1, num_blocks = 0;  // shapes that hold either batch
  for (const auto* batch : {&batch_a, &batch_b}) {
    int total = 0;
    for (const Req& r : *batch) {
      max_blocks = std::max(max_blocks, blocks_for(r.context, cfg.block_size));
      total += blocks_for(r.context, cfg.block_size);
    }
    num_blocks = std::max(num_blocks, 1 + total + 3);
  }
  const Step a = make_step(cfg, batch_a, rng, reqs_padded, n_padded, max_blocks, num_blocks);
  const Step b = make_step(cfg, batch_b, rng, reqs_padded, n_padded, max_blocks, num_blocks);
  ASSERT_EQ(a.n, b.n);
  ASSERT_EQ(a.reqs, b.reqs);
  // The graph's request count is a capture size, as in the runner: an eager run of any batch the
  // graph holds then falls in the graph's bucket (`auto` chooses its kernel by bucket).
  const std::vector<int64_t> capture_sizes = {reqs_padded};
  auto backend = make_attention_backend(name, limits_for(cfg));
  backend->set_capture_sizes(capture_sizes);
  const DeviceStep d = to_device(a);
  cudaStream_t stream;
  FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    Graph g;
    capture(g, *backend, a, d, stream);
    for (const Step* s : {&a, &b, &a}) {
      upload_step(*s, d);
      const std::vector<uint16_t> replayed = replay(g, d, stream);
      expect_matches_cpu(*s, replayed, run_cpu(*s));
      const Step u = unpadded(*s);
      auto fresh_backend = make_attention_backend(name, limits_for(cfg));
      fresh_backend->set_capture_sizes(capture_sizes);
      const std::vector<uint16_t> eager = run_gpu(*fresh_backend, u, to_device(u));
      for (int r = 0; r < s->reqs_real; ++r)
        EXPECT_EQ(differing_elements(*s, replayed, r, u, eager, r), 0u)
            << name << " " << cfg.label() << ": replayed request " << r << " differs from an eager unpadded run";
    }
  }
  FG_CUDA_CHECK(cudaStreamDestroy(stream));
}

// A request alone and the same request (same q, same KV values) inside a padded batch of others,
// on `backend` (`name` labels it).
inline void check_batch_independence(AttentionBackend& backend, const std::string& name, const Config& cfg,
                                     const std::vector<Req>& others, Req lone, int reqs_padded, int n_padded) {
  std::mt19937 rng(11);
  std::vector<Req> batch = others;
  const int position = static_cast<int>(batch.size()) / 2;
  batch.insert(batch.begin() + position, lone);
  const Step big = make_step(cfg, batch, rng, reqs_padded, n_padded);
  // The lone step reuses the big step's cache and q rows, with a one-request batch over them.
  Step alone = big;
  alone.reqs = alone.reqs_real = 1;
  alone.n = lone.query_len;
  alone.qsl = {0, lone.query_len};
  alone.seq_lens = {lone.context};
  alone.table.assign(big.table.begin() + static_cast<size_t>(position) * big.max_blocks,
                     big.table.begin() + static_cast<size_t>(position + 1) * big.max_blocks);
  alone.owner.assign(alone.n, 0);
  const size_t w = cfg.width();
  alone.q.bits.assign(big.q.bits.begin() + big.qsl[position] * w, big.q.bits.begin() + big.qsl[position + 1] * w);
  alone.q.values.assign(big.q.values.begin() + big.qsl[position] * w,
                        big.q.values.begin() + big.qsl[position + 1] * w);

  const DeviceStep d_big = to_device(big);
  const std::vector<uint16_t> first = run_gpu(backend, big, d_big);
  const std::vector<uint16_t> second = run_gpu(backend, big, d_big);
  EXPECT_EQ(first, second) << name << " " << cfg.label() << ": the same batch gave different bits on a second run";
  expect_matches_cpu(big, first, run_cpu(big));
  const std::vector<uint16_t> lone_out = run_gpu(backend, alone, to_device(alone));
  EXPECT_EQ(differing_elements(big, first, position, alone, lone_out, 0), 0u)
      << name << " " << cfg.label() << ": request (" << lone.query_len << " tokens, context " << lone.context
      << ") differs alone and in a padded batch";
}

inline void check_batch_independence(const std::string& name, const Config& cfg, const std::vector<Req>& others,
                                     Req lone, int reqs_padded, int n_padded) {
  auto backend = make_attention_backend(name, limits_for(cfg));
  check_batch_independence(*backend, name, cfg, others, lone, reqs_padded, n_padded);
}

// The kernels request KV tiles before their PDL wait (kReadsBeforePdlWait), while the kernel before
// them (RoPE and the cache write) may still run; only the step's own rows must wait for it. Here
// two late copies stand in for that kernel: the cache starts with the step's rows poisoned, and
// the copies that bring the true cache let the attention launch at once and land 100 us later. A
// kernel that read a step row before its wait would see NaN in it.
inline void check_step_rows_read_after_the_wait(const std::string& name, const Config& cfg,
                                                const std::vector<Req>& batch) {
  std::mt19937 rng(31);
  const Step s = make_step(cfg, batch, rng);
  const DeviceStep d = to_device(s);
  // The cache's bytes, BF16 or e4m3; 0xFF is a NaN in either.
  const size_t elem_bytes = cfg.fp8_kv ? 1 : 2;
  auto cache_bytes = [&](const Bf16Values& values, const std::vector<uint8_t>& e4m3) {
    if (cfg.fp8_kv) return e4m3;
    std::vector<uint8_t> bytes(values.bits.size() * 2);
    std::memcpy(bytes.data(), values.bits.data(), bytes.size());
    return bytes;
  };
  const std::vector<uint8_t> k_true = cache_bytes(s.k, s.k8), v_true = cache_bytes(s.v, s.v8);
  DeviceBuffer true_k = device_alloc(d.k.tensor.dtype, {s.num_blocks, cfg.block_size, cfg.num_kv_heads, cfg.head_dim});
  DeviceBuffer true_v = device_alloc(d.v.tensor.dtype, {s.num_blocks, cfg.block_size, cfg.num_kv_heads, cfg.head_dim});
  upload(true_k.tensor, k_true);
  upload(true_v.tensor, v_true);
  std::vector<uint8_t> k_early = k_true, v_early = v_true;
  const size_t slot_bytes = static_cast<size_t>(cfg.num_kv_heads) * cfg.head_dim * elem_bytes;
  size_t poisoned_slots = 0;
  for (int r = 0; r < s.reqs_real; ++r) {
    for (int pos = s.seq_lens[r] - (s.qsl[r + 1] - s.qsl[r]); pos < s.seq_lens[r]; ++pos, ++poisoned_slots) {
      const size_t slot = static_cast<size_t>(s.table[static_cast<size_t>(r) * s.max_blocks + pos / cfg.block_size]) *
                              cfg.block_size + pos % cfg.block_size;
      std::fill_n(k_early.begin() + slot * slot_bytes, slot_bytes, uint8_t{0xFF});
      std::fill_n(v_early.begin() + slot * slot_bytes, slot_bytes, uint8_t{0xFF});
    }
  }
  ASSERT_GT(poisoned_slots, 0u);
  upload(d.k.tensor, k_early);
  upload(d.v.tensor, v_early);
  poison(d.out.tensor);
  auto backend = make_attention_backend(name, limits_for(cfg));
  cudaStream_t stream;
  FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  FG_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads above ran on the legacy stream
  constexpr int64_t kDelayNs = 100'000;
  launch_late_copy(d.k.tensor.data, true_k.tensor.data, d.k.tensor.nbytes(), kDelayNs, stream);
  launch_late_copy(d.v.tensor.data, true_v.tensor.data, d.v.tensor.nbytes(), 0, stream);
  backend->run(d.q.tensor, d.cache(), d.meta(s.uniform_query_len), cfg.scale(), d.out.tensor, stream);
  FG_CUDA_CHECK(cudaStreamSynchronize(stream));
  FG_CUDA_CHECK(cudaStreamDestroy(stream));
  SCOPED_TRACE(name + ", the step's KV rows written by the kernel just before");
  expect_matches_cpu(s, download<uint16_t>(d.out.tensor), run_cpu(s));
}

}  // namespace fg::gpu_test::attention_test
