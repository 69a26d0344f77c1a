// bench/kernels/linear_tables.cpp — the decode matmul tables of `bench kernels` (linear,
// linear_rows): each decode weight read by the engine's kernels and by cuBLASLt, beside a kernel
// that only reads the weight.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/kernels/bench_support.h"
#include "bench/kernels/read_kernels.h"
#include "bench/kernels/tables.h"
#include "backend/cuda/streamed_linear.h"

namespace fg::bench {

namespace {

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

}  // namespace

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

}  // namespace fg::bench
