// bench/kernels/setting_sweeps.cpp — the sweeps of `bench kernels` (streamed_k_slices,
// streamed_blocks_per_sm, direct_warps): one kernel setting over the decode shapes, each value's
// time beside the value the kernel's rule picks.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "bench/kernels/bench_support.h"
#include "bench/kernels/tables.h"
#include "backend/cuda/small_n_linear.h"
#include "backend/cuda/streamed_linear.h"

namespace fg::bench {

namespace {

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

}  // namespace

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

}  // namespace fg::bench
