// backend/cuda/kernel_bench.cpp — the kernel benchmarks (see kernel_bench.h). Host code only: it
// drives CudaBackend and its launchers and times them with CUDA events.
//
// Method (.library METHOD.md): warm up first; time many repetitions and report the median; read
// weights from a rotation of buffers whose total is several times the 50 MB L2, so that HBM, not
// the cache, serves them; never time on zeros (weights and KV caches get random values).
// Matmuls are timed as replays of a CUDA graph of kBatch launches, so launch gaps stay out of a
// kernel's number; the decode step is timed eagerly (what `generate --device cuda` runs) and,
// where the attention backend allows, as one graph replay.
#include "backend/cuda/kernel_bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/fill_kernels.h"
#include "backend/cuda/graph_timing.h"
#include "backend/cuda/read_kernels.h"
#include "backend/cuda/small_n_linear.h"
#include "backend/cuda/step_breakdown.h"
#include "backend/cuda/streamed_linear.h"
#include "model/llama_model.h"
#include "model/named_shapes.h"
#include "runner/host_step.h"

namespace fg::cuda {

namespace {

constexpr int kBatch = 20;               // launches per timed graph replay, at least
constexpr int kReps = 30;                // timed replays (median)
constexpr size_t kRotateBytes = 256u << 20;  // weight bytes cycled through: 5x the L2

// Milliseconds between two events around `work`, median over `reps` after `warmup` runs.
double time_ms(cudaStream_t stream, int warmup, int reps, const std::function<void()>& work) {
  return median_us(stream, reps, warmup, work) * 1e-3;
}

// Microseconds per launch of `launch(i)`, i = 0 .. launches-1 captured as one graph (so a rotation
// over `launches` weight buffers keeps its whole span between two uses of a buffer).
double time_per_launch_us(CudaBackend& backend, int launches, const std::function<void(int)>& launch) {
  for (int i = 0; i < launches; ++i) launch(i);  // eager first: plans (cuBLASLt algorithms) outside capture
  backend.synchronize();
  backend.begin_capture();
  for (int i = 0; i < launches; ++i) launch(i);
  std::unique_ptr<Graph> graph = backend.end_capture();
  return time_ms(backend.stream(), 3, kReps, [&] { graph->replay(); }) * 1e3 / launches;
}

// Device tensors of random bf16 values, each from its own seed; owns their memory.
class RandomTensors {
 public:
  explicit RandomTensors(CudaBackend& backend) : backend_(backend) {}

  Tensor bf16(std::initializer_list<int64_t> dims, float center, float scale) {
    Allocation a = backend_.allocate(DType::kBF16, dims);
    launch_fill_random_bf16(static_cast<__nv_bfloat16*>(a.tensor.data), a.tensor.numel(), next_seed_++, center,
                            scale, backend_.stream());
    memory_.push_back(a.memory);
    return a.tensor;
  }
  const std::vector<std::shared_ptr<void>>& memory() const { return memory_; }

 private:
  CudaBackend& backend_;
  uint64_t next_seed_ = 1;
  std::vector<std::shared_ptr<void>> memory_;
};

struct ModelShape {
  std::string name;
  int64_t layers, hidden, intermediate, heads, kv_heads, head_dim, vocab;
  bool tied;
};

const std::vector<ModelShape>& model_shapes() {
  static const std::vector<ModelShape> shapes = {
      {"Llama-3.2-1B", 16, 2048, 8192, 32, 8, 64, 128256, true},
      {"Llama-3.1-8B", 32, 4096, 14336, 32, 8, 128, 128256, false},
  };
  return shapes;
}

double copy_bandwidth_gbps(CudaBackend& backend) {
  const int64_t bytes = int64_t{1} << 30;
  Allocation src = backend.allocate(DType::kI32, {bytes / 4}), dst = backend.allocate(DType::kI32, {bytes / 4});
  const double ms = time_ms(backend.stream(), 2, 10, [&] {
    FG_CUDA_CHECK(cudaMemcpyAsync(dst.tensor.data, src.tensor.data, bytes, cudaMemcpyDeviceToDevice, backend.stream()));
  });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;  // read + written
}

struct LinearShape {
  std::string name;
  int64_t out_features, in;
};

std::vector<LinearShape> decode_linears(const ModelShape& m) {
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  // qkv_proj and gate_up_proj: the spans the model runs as one matmul (Backend::linear_group).
  return {{"q_proj", q, m.hidden},
          {"k/v_proj", kv, m.hidden},
          {"qkv_proj", q + 2 * kv, m.hidden},
          {"o_proj", m.hidden, q},
          {"gate/up_proj", m.intermediate, m.hidden},
          {"gate_up_proj", 2 * m.intermediate, m.hidden},
          {"down_proj", m.hidden, m.intermediate},
          {"lm_head", m.vocab, m.hidden}};
}

// Copies of one random weight shape, enough of them that a rotation spans several L2s.
std::vector<Tensor> rotated_weights(RandomTensors& random, const LinearShape& shape) {
  const size_t weight_bytes = static_cast<size_t>(shape.out_features * shape.in) * 2;
  const int copies = static_cast<int>(std::max<size_t>(2, (kRotateBytes + weight_bytes - 1) / weight_bytes));
  std::vector<Tensor> weights;
  for (int c = 0; c < copies; ++c)
    weights.push_back(
        random.bf16({shape.out_features, shape.in}, 0.0f, 1.0f / std::sqrt(static_cast<float>(shape.in))));
  return weights;
}

// One decode weight as the matmul tables time it: its rotated copies, `rows` random token rows and
// an output for as many (F32 for the LM head, as the model runs it), and the time of reading the
// weight alone (a kernel whose reads never wait: an upper limit at this size).
struct WeightBench {
  std::vector<Tensor> weights;
  int launches;  // per timed graph replay
  size_t weight_bytes;
  Tensor x;
  Allocation out;
  double read_us;
};

WeightBench weight_bench(CudaBackend& backend, RandomTensors& random, const LinearShape& shape, int64_t rows,
                         unsigned* sink) {
  WeightBench b;
  b.weights = rotated_weights(random, shape);
  const int copies = static_cast<int>(b.weights.size());
  b.launches = std::max(kBatch, copies);
  b.weight_bytes = static_cast<size_t>(shape.out_features * shape.in) * 2;
  b.x = random.bf16({rows, shape.in}, 0.0f, 1.0f);
  b.out = backend.allocate(shape.name == "lm_head" ? DType::kF32 : DType::kBF16, {rows, shape.out_features});
  b.read_us = time_per_launch_us(backend, b.launches, [&](int i) {
    launch_read_only(b.weights[i % copies].data, static_cast<int64_t>(b.weight_bytes), sink, backend.stream());
  });
  return b;
}

// A kernel setting swept over the decode shapes (the LM heads only where with_lm_heads), at M = 1
// and 16: the measurement behind a setting's rule.
struct SettingSweep {
  std::string title;  // the table's heading
  std::string label;  // the setting's short name, a column prefix ("S", "w")
  std::vector<int> values;
  std::function<int(const LinearShape&, int64_t m)> picked;  // the value the kernel's rule takes
  std::function<bool(const LinearShape&, int)> applies;    // false: the kernel refuses the value
  std::function<void(const __nv_bfloat16* x, const __nv_bfloat16* w, void* out, int64_t m, const LinearShape&,
                     int value)>
      launch;
  bool with_lm_heads = false;
};

// Prints one row per shape and M (us per launch at each value, * on the rule's pick); returns the
// same rows as JSON.
nlohmann::json bench_setting_sweep(CudaBackend& backend, const SettingSweep& sweep) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\n{} (us per launch); * = the rule's pick\n", sweep.title);
  fmt::print("{:<14} {:<12} {:>6} {:>6} {:>3} |", "model", "matmul", "out", "in", "M");
  for (int v : sweep.values) fmt::print(" {:>7}", fmt::format("{}={}", sweep.label, v));
  fmt::print("\n");
  for (const ModelShape& m : model_shapes()) {
    for (const LinearShape& shape : decode_linears(m)) {
      if (shape.name == "lm_head" && !sweep.with_lm_heads) continue;
      RandomTensors random{backend};
      const std::vector<Tensor> weights = rotated_weights(random, shape);
      const int copies = static_cast<int>(weights.size());
      const Tensor x = random.bf16({16, shape.in}, 0.0f, 1.0f);
      Allocation out = backend.allocate(DType::kBF16, {16, shape.out_features});
      for (int64_t rows_m : {1, 16}) {
        const int picked = sweep.picked(shape, rows_m);
        fmt::print("{:<14} {:<12} {:>6} {:>6} {:>3} |", m.name, shape.name, shape.out_features, shape.in, rows_m);
        nlohmann::json us_by_value = nlohmann::json::object();
        for (int v : sweep.values) {
          if (!sweep.applies(shape, v)) {
            fmt::print(" {:>7}", "-");
            continue;
          }
          const double us = time_per_launch_us(backend, std::max(kBatch, copies), [&](int i) {
            sweep.launch(static_cast<const __nv_bfloat16*>(x.data),
                         static_cast<const __nv_bfloat16*>(weights[i % copies].data), out.tensor.data, rows_m, shape,
                         v);
          });
          fmt::print(" {:>6.2f}{}", us, v == picked ? '*' : ' ');
          us_by_value[std::to_string(v)] = us;
        }
        fmt::print("\n");
        rows.push_back({{"model", m.name}, {"matmul", shape.name}, {"out", shape.out_features}, {"in", shape.in},
                        {"m", rows_m}, {"picked", picked}, {"us_by_value", us_by_value}});
      }
    }
  }
  return rows;
}

// The streamed kernel at each slice count of k (the LM heads' tiles fill the grid without
// slices): the measurement behind streamed_k_slices.
nlohmann::json bench_streamed_k_slices(CudaBackend& backend) {
  cuda::StreamedLinear streamed(backend.sm_count());
  const int sm_count = backend.sm_count();
  return bench_setting_sweep(
      backend,
      {"Streamed linear by slices of k", "S", {1, 2, 4, 8},
       [&](const LinearShape& shape, int64_t) {
         return cuda::streamed_k_slices(shape.out_features, shape.in, sm_count);
       },
       [&](const LinearShape& shape, int s) {
         const int64_t tiles = (shape.out_features + cuda::kStreamedBoxRows - 1) / cuda::kStreamedBoxRows;
         const int64_t chunks = (shape.in + cuda::kStreamedBoxK - 1) / cuda::kStreamedBoxK;
         return s <= chunks && (s == 1 || s * tiles <= cuda::streamed_full_pass_units(sm_count));
       },
       [&](const __nv_bfloat16* x, const __nv_bfloat16* w, void* out, int64_t m, const LinearShape& shape, int s) {
         streamed.run(x, w, nullptr, cuda::LinearOutputs::whole(out, shape.out_features), false, m, shape.in,
                      shape.out_features, backend.stream(), s);
       }});
}

// The streamed kernel at 1 and 2 blocks per SM (its slices of k as the rule picks them): the
// measurement behind streamed_blocks_per_sm.
nlohmann::json bench_streamed_blocks_per_sm(CudaBackend& backend) {
  cuda::StreamedLinear streamed(backend.sm_count());
  const int sm_count = backend.sm_count();
  return bench_setting_sweep(
      backend,
      {"Streamed linear by blocks per SM", "b", {1, 2},
       [&](const LinearShape& shape, int64_t m) {
         const int k_slices = cuda::streamed_k_slices(shape.out_features, shape.in, sm_count);
         return cuda::streamed_blocks_per_sm(shape.out_features, k_slices, m, sm_count);
       },
       [](const LinearShape&, int) { return true; },
       [&](const __nv_bfloat16* x, const __nv_bfloat16* w, void* out, int64_t m, const LinearShape& shape, int b) {
         streamed.run(x, w, nullptr, cuda::LinearOutputs::whole(out, shape.out_features), false, m, shape.in,
                      shape.out_features, backend.stream(), 0, b);
       },
       /*with_lm_heads=*/true});
}

// The direct kernel at each warp count per block: the measurement behind small_n_linear_warps.
nlohmann::json bench_direct_warps(CudaBackend& backend) {
  const int sm_count = backend.sm_count();
  return bench_setting_sweep(
      backend,
      {"Direct small-n linear by warps per block", "w", {2, 4, 8, 16},
       [&](const LinearShape& shape, int64_t) { return cuda::small_n_linear_warps(shape.out_features, sm_count); },
       [](const LinearShape&, int) { return true; },
       [&](const __nv_bfloat16* x, const __nv_bfloat16* w, void* out, int64_t m, const LinearShape& shape, int warps) {
         cuda::launch_small_n_linear(x, w, nullptr, cuda::LinearOutputs::whole(out, shape.out_features), false, m,
                                     shape.in, shape.out_features, warps,
                                     backend.stream());
       }});
}

nlohmann::json bench_linears(CudaBackend& backend, double copy_gbps) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nDecode matmuls (weight bytes / time; % of copy bandwidth {:.0f} GB/s). direct = small_n_linear,\n"
             "streamed = streamed_linear; ours = the one the shape rule picks (*), against cuBLASLt. read = a\n"
             "kernel that only reads the weight, its reads never waiting for the launch before (an upper\n"
             "limit at this size); ours/read = its time over ours.\n",
             copy_gbps);
  fmt::print("{:<14} {:<12} {:>7} {:>7} {:>3} | {:>8} {:>5} | {:>8} {:>5} | {:>9} {:>5} | {:>6} | {:>7} {:>5} | {:>9}\n",
             "model", "matmul", "out", "in", "M", "direct", "%", "streamed", "%", "cublas us", "%", "ours/lt",
             "read us", "%", "ours/read");
  Allocation sink = backend.allocate(DType::kI32, {1});
  for (const ModelShape& m : model_shapes()) {
    for (const LinearShape& shape : decode_linears(m)) {
      const auto& [name, out_features, in] = shape;
      RandomTensors random{backend};
      const WeightBench b = weight_bench(backend, random, shape, 16, static_cast<unsigned*>(sink.tensor.data));
      const auto& [weights, launches, weight_bytes, x, out, read_us] = b;
      const int copies = static_cast<int>(weights.size());
      const bool streamed = cuda::prefers_streamed_linear(out_features, in, backend.sm_count());
      const double read_pct = 100 * (weight_bytes / (read_us * 1e-6) / 1e9) / copy_gbps;
      for (int64_t rows_m : {1, 4, 16}) {
        constexpr int kPaths = 3;
        const LinearPath paths[kPaths] = {LinearPath::kSmallNDirect, LinearPath::kSmallNStreamed,
                                          LinearPath::kCublasLt};
        double us[kPaths], pct[kPaths];
        for (int p = 0; p < kPaths; ++p) {
          us[p] = time_per_launch_us(backend, launches, [&](int i) {
            backend.linear_with(paths[p], x.rows(0, rows_m), weights[i % copies], nullptr, out.tensor.rows(0, rows_m));
          });
          pct[p] = 100 * (weight_bytes / (us[p] * 1e-6) / 1e9) / copy_gbps;
        }
        const double ours_us = streamed ? us[1] : us[0];
        fmt::print("{:<14} {:<12} {:>7} {:>7} {:>3} | {:>7.2f}{} {:>4.0f}% | {:>7.2f}{} {:>4.0f}% | {:>9.2f} {:>4.0f}% | "
                   "{:>5.2f}x | {:>7.2f} {:>4.0f}% | {:>8.0f}%\n",
                   m.name, name, out_features, in, rows_m, us[0], streamed ? ' ' : '*', pct[0], us[1],
                   streamed ? '*' : ' ', pct[1], us[2], pct[2], us[2] / ours_us, read_us, read_pct,
                   100 * read_us / ours_us);
        rows.push_back({{"model", m.name}, {"matmul", name}, {"out", out_features}, {"in", in}, {"m", rows_m},
                        {"direct_us", us[0]}, {"direct_pct_of_copy", pct[0]}, {"streamed_us", us[1]},
                        {"streamed_pct_of_copy", pct[1]}, {"ours", streamed ? "streamed" : "direct"},
                        {"ours_us", ours_us}, {"cublaslt_us", us[2]}, {"cublaslt_pct_of_copy", pct[2]},
                        {"cublaslt_over_ours", us[2] / ours_us}, {"read_only_us", read_us},
                        {"read_only_pct_of_copy", read_pct}});
      }
    }
  }
  return rows;
}

// Past 16 token rows the decode matmuls leave the engine's kernels for cuBLASLt (kSmallNMaxRows):
// cuBLASLt at 16-64 rows on each decode weight, against ours at 16 and a read of the weight alone.
// A weight is still read once at 64 rows, so the read bounds every row of this table.
nlohmann::json bench_linear_rows(CudaBackend& backend, double copy_gbps) {
  nlohmann::json rows = nlohmann::json::array();
  const std::vector<int64_t> row_counts = {16, 24, 32, 48, 64};
  fmt::print("\nDecode matmuls past 16 rows (us; % of copy bandwidth {:.0f} GB/s): ours at 16 rows, cuBLASLt at 16-64,\n"
             "and a read of the weight alone\n",
             copy_gbps);
  fmt::print("{:<14} {:<12} {:>6} {:>6} | {:>11} | {:>32} | {:>8}\n", "model", "matmul", "out", "in", "ours M=16",
             "cuBLASLt M=16 / 24 / 32 / 48 / 64", "read");
  Allocation sink = backend.allocate(DType::kI32, {1});
  for (const ModelShape& m : model_shapes()) {
    for (const LinearShape& shape : decode_linears(m)) {
      const auto& [name, out_features, in] = shape;
      RandomTensors random{backend};
      const WeightBench b =
          weight_bench(backend, random, shape, row_counts.back(), static_cast<unsigned*>(sink.tensor.data));
      const auto& [weights, launches, weight_bytes, x, out, read_us] = b;
      const int copies = static_cast<int>(weights.size());
      auto time_path = [&](LinearPath path, int64_t rows_m) {
        return time_per_launch_us(backend, launches, [&](int i) {
          backend.linear_with(path, x.rows(0, rows_m), weights[i % copies], nullptr, out.tensor.rows(0, rows_m));
        });
      };
      auto pct = [&](double us) { return 100 * (weight_bytes / (us * 1e-6) / 1e9) / copy_gbps; };
      const double ours = time_path(LinearPath::kSmallN, 16);
      std::string cublas_text;
      nlohmann::json cublas = nlohmann::json::object();
      for (const int64_t rows_m : row_counts) {
        const double us = time_path(LinearPath::kCublasLt, rows_m);
        cublas_text += fmt::format("{}{:.1f} ({:.0f}%)", cublas_text.empty() ? "" : " / ", us, pct(us));
        cublas[std::to_string(rows_m)] = us;
      }
      fmt::print("{:<14} {:<12} {:>6} {:>6} | {:>5.1f} ({:>3.0f}%) | {} | {:>5.1f} ({:.0f}%)\n", m.name, name,
                 out_features, in, ours, pct(ours), cublas_text, read_us, pct(read_us));
      rows.push_back({{"model", m.name}, {"matmul", name}, {"out", out_features}, {"in", in}, {"ours_m16_us", ours},
                      {"cublaslt_us", cublas}, {"read_only_us", read_us}});
    }
  }
  return rows;
}

// The MLP's first half as the model runs it (Backend::linear_silu_mul): the gated streamed kernel
// (one launch) against the two steps it replaces (the streamed gate/up span, then silu_mul) and
// against cuBLASLt's two GEMMs then silu_mul.
nlohmann::json bench_gated_mlp(CudaBackend& backend, double copy_gbps) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nGate/up + SiLU-and-multiply (weight bytes / time; % of copy bandwidth). fused = one gated launch;\n"
             "span + silu = the streamed gate/up span, then silu_mul; cublas = two cuBLASLt GEMMs, then silu_mul.\n");
  fmt::print("{:<14} {:>6} {:>6} {:>3} | {:>8} {:>5} | {:>11} {:>5} | {:>9} {:>5} | {:>8} {:>8}\n", "model", "inter",
             "in", "M", "fused us", "%", "span+silu", "%", "cublas us", "%", "vs span", "vs lt");
  for (const ModelShape& m : model_shapes()) {
    const LinearShape span{"gate_up_proj", 2 * m.intermediate, m.hidden};
    if (!cuda::gated_linear_applies(m.intermediate, m.hidden, backend.sm_count())) continue;
    RandomTensors random{backend};
    const size_t weight_bytes = static_cast<size_t>(span.out_features * span.in) * 2;
    const std::vector<Tensor> weights = rotated_weights(random, span);
    const int copies = static_cast<int>(weights.size());
    const Tensor x = random.bf16({16, m.hidden}, 0.0f, 1.0f);
    Allocation gate = backend.allocate(DType::kBF16, {16, m.intermediate});
    Allocation up = backend.allocate(DType::kBF16, {16, m.intermediate});
    Allocation act = backend.allocate(DType::kBF16, {16, m.intermediate});
    for (int64_t rows_m : {1, 4, 16}) {
      const Tensor x_m = x.rows(0, rows_m), gate_m = gate.tensor.rows(0, rows_m), up_m = up.tensor.rows(0, rows_m),
                   act_m = act.tensor.rows(0, rows_m);
      auto halves = [&](int i) {
        return std::pair{weights[i % copies].rows(0, m.intermediate),
                         weights[i % copies].rows(m.intermediate, m.intermediate)};
      };
      const double fused = time_per_launch_us(backend, std::max(kBatch, copies), [&](int i) {
        const auto [g, u] = halves(i);
        backend.linear_silu_mul(x_m, g, u, gate_m, up_m, act_m);
      });
      const double two_steps = time_per_launch_us(backend, std::max(kBatch, copies), [&](int i) {
        const auto [g, u] = halves(i);
        backend.linear_group(x_m, {{&g, nullptr, gate_m}, {&u, nullptr, up_m}});
        backend.silu_mul(gate_m, up_m, act_m);
      });
      const double cublas = time_per_launch_us(backend, std::max(kBatch, copies), [&](int i) {
        const auto [g, u] = halves(i);
        backend.linear_with(LinearPath::kCublasLt, x_m, g, nullptr, gate_m);
        backend.linear_with(LinearPath::kCublasLt, x_m, u, nullptr, up_m);
        backend.silu_mul(gate_m, up_m, act_m);
      });
      auto pct = [&](double us) { return 100 * (weight_bytes / (us * 1e-6) / 1e9) / copy_gbps; };
      fmt::print("{:<14} {:>6} {:>6} {:>3} | {:>8.2f} {:>4.0f}% | {:>11.2f} {:>4.0f}% | {:>9.2f} {:>4.0f}% | {:>7.2f}x "
                 "{:>7.2f}x\n",
                 m.name, m.intermediate, m.hidden, rows_m, fused, pct(fused), two_steps, pct(two_steps), cublas,
                 pct(cublas), two_steps / fused, cublas / fused);
      rows.push_back({{"model", m.name}, {"intermediate", m.intermediate}, {"in", m.hidden}, {"m", rows_m},
                      {"fused_us", fused}, {"span_then_silu_us", two_steps}, {"cublaslt_then_silu_us", cublas},
                      {"fused_pct_of_copy", pct(fused)}});
    }
  }
  return rows;
}

// Where the residual stream meets the matmuls (Backend::linear_residual_add, rms_norm_linear_group,
// rms_norm_linear_silu_mul), against the steps they replace: each fused op alone against its plain
// matmul, and the two pairs a layer runs (o_proj then the MLP's first half; down_proj then the next
// layer's q/k/v) against the three launches each pair took before (the matmul, add_rms_norm, the
// next matmul), back to back in a graph like a decode step's chain.
nlohmann::json bench_residual_stream(CudaBackend& backend) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nThe residual stream in the matmuls (us per launch or pair, back to back in a graph). plain = the\n"
             "matmul alone; fused = with the residual add in its store or the norm in its input; steps = matmul,\n"
             "add_rms_norm, next matmul (before); pair = the two fused ops.\n");
  fmt::print("{:<14} {:>3} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8}\n", "model", "M",
             "o plain", "o +add", "qkv", "qkv+norm", "gu plain", "gu+norm", "o steps", "o pair", "dn steps",
             "dn pair");
  for (const ModelShape& m : model_shapes()) {
    RandomTensors random{backend};
    const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim, qkv_rows = q + 2 * kv;
    const std::vector<Tensor> o_w = rotated_weights(random, {"o_proj", m.hidden, q});
    const std::vector<Tensor> qkv_w = rotated_weights(random, {"qkv_proj", qkv_rows, m.hidden});
    const std::vector<Tensor> gu_w = rotated_weights(random, {"gate_up_proj", 2 * m.intermediate, m.hidden});
    const std::vector<Tensor> down_w = rotated_weights(random, {"down_proj", m.hidden, m.intermediate});
    const int launches = std::max<int>({kBatch, static_cast<int>(o_w.size()), static_cast<int>(qkv_w.size()),
                                        static_cast<int>(gu_w.size()), static_cast<int>(down_w.size())});
    const Tensor norm_w = random.bf16({m.hidden}, 1.0f, 0.1f);
    const Tensor attn = random.bf16({16, q}, 0.0f, 1.0f), act = random.bf16({16, m.intermediate}, 0.0f, 1.0f);
    const Tensor residual = random.bf16({16, m.hidden}, 0.0f, 1.0f);
    Allocation normed = backend.allocate(DType::kBF16, {16, m.hidden});
    Allocation proj = backend.allocate(DType::kBF16, {16, m.hidden});
    Allocation qkv_out = backend.allocate(DType::kBF16, {16, qkv_rows});
    Allocation gate = backend.allocate(DType::kBF16, {16, m.intermediate});
    Allocation up = backend.allocate(DType::kBF16, {16, m.intermediate});
    Allocation mlp = backend.allocate(DType::kBF16, {16, m.intermediate});
    for (int64_t rows_m : {1, 16}) {
      const Tensor res = residual.rows(0, rows_m), nrm = normed.tensor.rows(0, rows_m), prj = proj.tensor.rows(0, rows_m);
      const Tensor qkv = qkv_out.tensor.rows(0, rows_m), g = gate.tensor.rows(0, rows_m), u = up.tensor.rows(0, rows_m);
      const Tensor out = mlp.tensor.rows(0, rows_m), a = attn.rows(0, rows_m), x = act.rows(0, rows_m);
      auto gate_up = [&](int i) {
        const Tensor& span = gu_w[i % gu_w.size()];
        return std::pair{span.rows(0, m.intermediate), span.rows(m.intermediate, m.intermediate)};
      };
      auto o_steps = [&](int i, bool fused) {
        const auto [gw, uw] = gate_up(i);
        if (fused) {
          backend.linear_residual_add(a, o_w[i % o_w.size()], prj, res);
          backend.rms_norm_linear_silu_mul(res, norm_w, 1e-5f, nrm, gw, uw, g, u, out);
        } else {
          backend.linear(a, o_w[i % o_w.size()], nullptr, prj);
          backend.add_rms_norm(res, prj, norm_w, 1e-5f, nrm);
          backend.linear_silu_mul(nrm, gw, uw, g, u, out);
        }
      };
      auto down_steps = [&](int i, bool fused) {
        const Tensor& w = qkv_w[i % qkv_w.size()];
        if (fused) {
          backend.linear_residual_add(x, down_w[i % down_w.size()], prj, res);
          backend.rms_norm_linear_group(res, norm_w, 1e-5f, nrm, Tensor(), {{&w, nullptr, qkv}});
        } else {
          backend.linear(x, down_w[i % down_w.size()], nullptr, prj);
          backend.add_rms_norm(res, prj, norm_w, 1e-5f, nrm);
          backend.linear_group(nrm, {{&w, nullptr, qkv}});
        }
      };
      auto time = [&](const std::function<void(int)>& launch) { return time_per_launch_us(backend, launches, launch); };
      const double o_plain = time([&](int i) { backend.linear(a, o_w[i % o_w.size()], nullptr, prj); });
      const double o_add = time([&](int i) { backend.linear_residual_add(a, o_w[i % o_w.size()], prj, res); });
      const double qkv_plain = time([&](int i) { backend.linear(res, qkv_w[i % qkv_w.size()], nullptr, qkv); });
      const double qkv_norm = time([&](int i) {
        backend.rms_norm_linear_group(res, norm_w, 1e-5f, nrm, Tensor(), {{&qkv_w[i % qkv_w.size()], nullptr, qkv}});
      });
      const double gu_plain = time([&](int i) {
        const auto [gw, uw] = gate_up(i);
        backend.linear_silu_mul(res, gw, uw, g, u, out);
      });
      const double gu_norm = time([&](int i) {
        const auto [gw, uw] = gate_up(i);
        backend.rms_norm_linear_silu_mul(res, norm_w, 1e-5f, nrm, gw, uw, g, u, out);
      });
      const double o_before = time([&](int i) { o_steps(i, false); }), o_pair = time([&](int i) { o_steps(i, true); });
      const double down_before = time([&](int i) { down_steps(i, false); });
      const double down_pair = time([&](int i) { down_steps(i, true); });
      fmt::print("{:<14} {:>3} | {:>8.2f} {:>8.2f} | {:>8.2f} {:>8.2f} | {:>8.2f} {:>8.2f} | {:>8.2f} {:>8.2f} | "
                 "{:>8.2f} {:>8.2f}\n",
                 m.name, rows_m, o_plain, o_add, qkv_plain, qkv_norm, gu_plain, gu_norm, o_before, o_pair,
                 down_before, down_pair);
      rows.push_back({{"model", m.name}, {"m", rows_m}, {"o_proj_us", o_plain}, {"o_proj_add_us", o_add},
                      {"qkv_us", qkv_plain}, {"qkv_norm_us", qkv_norm}, {"gate_up_silu_us", gu_plain},
                      {"gate_up_silu_norm_us", gu_norm}, {"o_steps_us", o_before}, {"o_pair_us", o_pair},
                      {"down_steps_us", down_before}, {"down_pair_us", down_pair}});
    }
  }
  return rows;
}

ModelConfig config_of(const ModelShape& m) {
  ModelConfig c;
  c.architecture_name = "LlamaForCausalLM";
  c.vocab_size = m.vocab;
  c.hidden_size = m.hidden;
  c.intermediate_size = m.intermediate;
  c.num_layers = m.layers;
  c.num_heads = m.heads;
  c.num_kv_heads = m.kv_heads;
  c.head_dim = m.head_dim;
  c.max_position_embeddings = 8192;
  c.rms_norm_eps = 1e-5;
  c.rope.theta = 500000.0;
  c.tie_word_embeddings = m.tied;
  return c;
}

// The decode-step table's models: the matmul tables' Llama shapes, and Qwen3-0.6B (its named
// shape, RoPE table cut to 8192 positions) for the q/k-norm path.
std::vector<std::pair<std::string, ModelConfig>> decode_step_models() {
  std::vector<std::pair<std::string, ModelConfig>> models;
  for (const ModelShape& m : model_shapes()) models.emplace_back(m.name, config_of(m));
  ModelConfig qwen3 = named_model_config("qwen3-0.6b");
  qwen3.max_position_embeddings = 8192;
  models.emplace_back("Qwen3-0.6B", qwen3);
  return models;
}

// Random weights made on the device (the host dummy generator would take minutes for 8B).
ModelWeights random_weights(CudaBackend& backend, const ModelConfig& c) {
  FG_CHECK(!c.qkv_bias, "bench kernels: random weights have no q/k/v biases ({})", c.architecture_name);
  ModelWeights w;
  RandomTensors random{backend};
  auto matrix = [&](int64_t rows, int64_t cols) {
    return random.bf16({rows, cols}, 0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
  };
  auto norm = [&](int64_t size) { return random.bf16({size}, 1.0f, 0.1f); };
  w.embed_tokens = matrix(c.vocab_size, c.hidden_size);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    LayerWeights L;
    L.input_norm = norm(c.hidden_size);
    // q/k/v and gate/up back to back, as the model loader places them (one matmul each).
    const Tensor qkv = matrix(c.q_size() + 2 * c.kv_size(), c.hidden_size);
    L.q_proj = qkv.rows(0, c.q_size());
    L.k_proj = qkv.rows(c.q_size(), c.kv_size());
    L.v_proj = qkv.rows(c.q_size() + c.kv_size(), c.kv_size());
    if (c.qk_norm) {
      L.q_norm = norm(c.head_dim);
      L.k_norm = norm(c.head_dim);
    }
    L.o_proj = matrix(c.hidden_size, c.q_size());
    L.post_attention_norm = norm(c.hidden_size);
    const Tensor gate_up = matrix(2 * c.intermediate_size, c.hidden_size);
    L.gate_proj = gate_up.rows(0, c.intermediate_size);
    L.up_proj = gate_up.rows(c.intermediate_size, c.intermediate_size);
    L.down_proj = matrix(c.hidden_size, c.intermediate_size);
    w.layers.push_back(L);
  }
  w.final_norm = norm(c.hidden_size);
  w.lm_head = c.tie_word_embeddings ? w.embed_tokens : matrix(c.vocab_size, c.hidden_size);
  for (const auto& m : random.memory()) w.keep_alive.push_back(m);
  return w;
}

// The table of a step breakdown (step_breakdown.h), kernels in the order they first run.
nlohmann::json print_breakdown(const std::string& model, int64_t batch, const StepBreakdown& b) {
  fmt::print("  where the graph replay of {}'s batch-{} step goes ({:.1f} us; each kernel's time added to the\n"
             "  chain, from replays of its prefixes; the first kernel's includes the graph launch):\n",
             model, batch, b.step_us);
  fmt::print("  {:<64} {:>8} {:>9} {:>9} {:>6} {:>5}\n", "kernel", "launches", "us", "us each", "share", "regs");
  nlohmann::json rows = nlohmann::json::array();
  for (const KernelShare& k : b.kernels) {
    fmt::print("  {:<64} {:>8} {:>9.1f} {:>9.2f} {:>5.1f}% {:>5}\n", k.name, k.launches, k.us, k.us / k.launches,
               100 * k.us / b.step_us, k.registers >= 0 ? std::to_string(k.registers) : "-");
    rows.push_back({{"kernel", k.name}, {"launches", k.launches}, {"us", k.us},
                    {"registers", k.registers >= 0 ? nlohmann::json(k.registers) : nlohmann::json()}});
  }
  return {{"step_us", b.step_us}, {"kernels", rows}};
}

nlohmann::json bench_decode_steps(CudaBackend& backend, const std::string& attention,
                                  const std::vector<int64_t>& breakdown_batches) {
  constexpr int64_t kContext = 512, kBlockSize = 16, kMaxBatch = 64;
  constexpr int64_t kBlocksPerRequest = kContext / kBlockSize;
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nDecode step, random weights, context {} per request, {} attention\n", kContext, attention);
  fmt::print("{:<14} {:>5} | {:>10} {:>10}\n", "model", "batch", "eager ms", "graph ms");
  for (const auto& [name, c] : decode_step_models()) {
    backend.set_attention(make_attention_backend(attention, attention_limits(c, kMaxBatch, kMaxBatch, kContext, kBlockSize)));
    LlamaModel model(c, random_weights(backend, c), backend, kMaxBatch, kMaxBatch);
    KvCache kv = allocate_kv_cache(backend, c, 1 + kMaxBatch * kBlocksPerRequest, kBlockSize, DType::kBF16);
    for (size_t l = 0; l < kv.layers.size(); ++l)
      for (const Tensor* t : {&kv.layers[l].k, &kv.layers[l].v})
        launch_fill_random_bf16(static_cast<__nv_bfloat16*>(t->data), t->numel(), 1000 + l, 0.0f, 1.0f,
                                backend.stream());

    for (int64_t batch : {1, 8, 64}) {
      std::vector<RequestChunk> chunks;
      for (int64_t r = 0; r < batch; ++r) {
        RequestChunk chunk{{static_cast<int32_t>((r * 7919) % c.vocab_size)}, kContext - 1, {}, false};
        for (int64_t b = 0; b < kBlocksPerRequest; ++b)
          chunk.block_ids.push_back(static_cast<int32_t>(1 + r * kBlocksPerRequest + b));
        chunks.push_back(chunk);
      }
      DeviceStep step = upload_step(backend, build_host_step(chunks, kBlockSize, kBlocksPerRequest));
      // Every request runs one query token, as the runner tells the attention backend for a
      // uniform-decode bucket (split_kv serves only those; without it the step runs its flash).
      step.inputs.attention.uniform_query_len = 1;
      const double eager_ms = time_ms(backend.stream(), 3, 20, [&] { model.forward(step.inputs, kv); });
      double graph_ms = NAN;
      try {
        backend.begin_capture();
        model.forward(step.inputs, kv);
        std::unique_ptr<Graph> graph = backend.end_capture();
        graph_ms = time_ms(backend.stream(), 3, 20, [&] { graph->replay(); });
      } catch (const std::exception& e) {
        fmt::print("  (graph capture failed: {})\n", e.what());
        try {
          backend.end_capture();  // ends the broken capture; its error is the one above
        } catch (const std::exception&) {
        }
        (void)cudaGetLastError();
      }
      fmt::print("{:<14} {:>5} | {:>10.3f} {:>10.3f}\n", name, batch, eager_ms, graph_ms);
      rows.push_back({{"model", name}, {"batch", batch}, {"context", kContext}, {"attention", attention},
                      {"eager_ms", eager_ms},
                      {"graph_ms", std::isnan(graph_ms) ? nlohmann::json() : nlohmann::json(graph_ms)}});
      const bool broken_down =
          std::find(breakdown_batches.begin(), breakdown_batches.end(), batch) != breakdown_batches.end();
      if (broken_down && !std::isnan(graph_ms))
        rows.back()["breakdown"] = print_breakdown(
            name, batch, breakdown_captured_step(backend.stream(), [&] { model.forward(step.inputs, kv); }, 30));
    }
    backend.synchronize();
  }
  return rows;
}

}  // namespace

const std::vector<std::string>& kernel_benchmark_tables() {
  static const std::vector<std::string> tables = {"linear",       "gated_mlp",   "residual_stream",
                                                  "streamed_k_slices", "streamed_blocks_per_sm",
                                                  "direct_warps", "decode_step", "linear_rows"};
  return tables;
}

int run_kernel_benchmarks(const std::string& json_out, const std::string& attention,
                          const std::vector<std::string>& tables, const std::vector<int64_t>& breakdown_batches) {
  const std::vector<std::string>& known = kernel_benchmark_tables();
  for (const std::string& t : tables)
    FG_CHECK(std::find(known.begin(), known.end(), t) != known.end(),
             "bench kernels: no table named '{}' (known: {})", t, fmt::join(known, ", "));
  auto wanted = [&](const char* t) {
    return tables.empty() || std::find(tables.begin(), tables.end(), t) != tables.end();
  };
  CudaBackend backend(0);
  cudaDeviceProp prop{};
  FG_CUDA_CHECK(cudaGetDeviceProperties(&prop, backend.device_index()));
  fmt::print("device: {} ({} SMs, L2 {} MB)\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);

  const double copy_gbps = copy_bandwidth_gbps(backend);
  fmt::print("device-to-device copy: {:.0f} GB/s (bytes read + written)\n", copy_gbps);
  nlohmann::json result;
  result["device"] = prop.name;
  result["copy_gbps"] = copy_gbps;
  if (wanted("linear")) result["linear"] = bench_linears(backend, copy_gbps);
  if (wanted("linear_rows")) result["linear_rows"] = bench_linear_rows(backend, copy_gbps);
  if (wanted("gated_mlp")) result["gated_mlp"] = bench_gated_mlp(backend, copy_gbps);
  if (wanted("residual_stream")) result["residual_stream"] = bench_residual_stream(backend);
  if (wanted("streamed_k_slices")) result["streamed_k_slices"] = bench_streamed_k_slices(backend);
  if (wanted("streamed_blocks_per_sm")) result["streamed_blocks_per_sm"] = bench_streamed_blocks_per_sm(backend);
  if (wanted("direct_warps")) result["direct_warps"] = bench_direct_warps(backend);
  if (wanted("decode_step")) result["decode_step"] = bench_decode_steps(backend, attention, breakdown_batches);
  if (!json_out.empty()) {
    std::ofstream(json_out) << result.dump(2) << "\n";
    fmt::print("\nwritten to {}\n", json_out);
  }
  return 0;
}

}  // namespace fg::cuda
