// tests/gpu/test_fp8_kernels.cpp — the FP8 kernels (backend/cuda/fp8_kernels.h) against host
// references: the quantizers bit for bit (CpuBackend::fp8_round's arithmetic, from
// fg::float_to_e4m3), the fused norm and SiLU quantizers bit for bit against quantizing what the
// unfused kernels store, and the decode linear against an fp64 reference of the same e4m3 values
// within a bound derived from its fp32 arithmetic, in both its kernels (the direct one and the
// streamed one, StreamedLinear::run_fp8, at forced slice counts and grids too); its rows' bits do
// not depend on n; the gated streamed kernel gives the span's linear then SiLU-and-multiply bit
// for bit. Outputs are poisoned first, so that every element a kernel fails to write shows. (Its
// speed is measured by `bench kernels --tables fp8_linear`.) The FP8 GEMM past the decode rows is
// tested in test_fp8_gemm.cpp.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/activation_kernels.h"
#include "backend/cuda/fp8_kernels.h"
#include "backend/cuda/linear_outputs.h"
#include "backend/cuda/norm_kernels.h"
#include "backend/cuda/streamed_linear.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_info.h"
#include "core/dtype.h"
#include "gpu/fp8_linear_case.h"
#include "gpu/gpu_test_support.h"
#include "gpu/late_copy_kernels.h"

namespace fg {
namespace {

using cuda::Fp8RowsView;
using cuda::LinearOutputs;
using gpu_test::bf16_half_ulp;
using gpu_test::bf16_ptr;
using gpu_test::device_bf16;
using gpu_test::DeviceBuffer;
using gpu_test::LinearCase;
using gpu_test::LinearShape;
using gpu_test::make_linear_case;
using gpu_test::OutputCheck;
using gpu_test::random_e4m3;
using gpu_test::random_scales;

constexpr uint8_t kPoisonByte = 0xFF;      // e4m3 NaN: never produced (the quantizers clamp first)
constexpr uint16_t kPoisonBf16 = 0xFFFF;   // what gpu_test::poison leaves in a bf16 element

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// CpuBackend::fp8_round's arithmetic (cpu_fp8.cpp) for one row: the e4m3 bytes and the scale.
float quantize_row_host(const float* v, int64_t width, float static_scale, uint8_t* q) {
  float s;
  if (static_scale > 0.0f) {
    s = static_scale;
  } else {
    float amax = 0.0f;
    for (int64_t j = 0; j < width; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    s = amax / kE4M3Max;
    if (s == 0.0f) s = 1.0f;
  }
  for (int64_t j = 0; j < width; ++j) q[j] = float_to_e4m3(std::fmin(std::fmax(v[j] / s, -kE4M3Max), kE4M3Max));
  return s;
}

struct HostRows {
  std::vector<uint8_t> values;  // [rows, width]
  std::vector<float> scales;    // [rows]
};

HostRows quantize_rows_host(const std::vector<float>& v, int64_t rows, int64_t width, float static_scale) {
  HostRows h{std::vector<uint8_t>(static_cast<size_t>(rows * width)), std::vector<float>(static_cast<size_t>(rows))};
  for (int64_t r = 0; r < rows; ++r)
    h.scales[r] = quantize_row_host(v.data() + r * width, width, static_scale, h.values.data() + r * width);
  return h;
}

// Device rows for a quantizer's output, poisoned.
struct DeviceRows {
  DeviceBuffer values, scales;
  Fp8RowsView view() const {
    return Fp8RowsView{static_cast<uint8_t*>(values.tensor.data), static_cast<float*>(scales.tensor.data)};
  }
};
DeviceRows poisoned_rows(int64_t rows, int64_t width) {
  DeviceRows d{gpu_test::device_alloc(DType::kF8E4M3, {rows, width}), gpu_test::device_alloc(DType::kF32, {rows})};
  gpu_test::poison(d.values.tensor);
  gpu_test::poison(d.scales.tensor);
  return d;
}

// Bitwise comparison of a quantizer's output with the host's; reports the first few mismatches.
void expect_rows_equal(const DeviceRows& got, const HostRows& want, int64_t width, const std::string& what) {
  const std::vector<uint8_t> values = gpu_test::download<uint8_t>(got.values.tensor);
  const std::vector<float> scales = gpu_test::download<float>(got.scales.tensor);
  ASSERT_EQ(values.size(), want.values.size()) << what;
  int reported = 0;
  for (size_t r = 0; r < scales.size(); ++r) {
    if (float_bits(scales[r]) != float_bits(want.scales[r]) && reported++ < 5)
      ADD_FAILURE() << what << ": scale of row " << r << " is " << scales[r] << ", want " << want.scales[r];
  }
  int64_t mismatches = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == want.values[i]) continue;
    if (mismatches++ < 5)
      ADD_FAILURE() << what << ": element (" << i / width << ", " << i % width << ") is 0x" << std::hex
                    << int{values[i]} << ", want 0x" << int{want.values[i]} << std::dec;
  }
  EXPECT_EQ(mismatches, 0) << what;
}

// Row r of a test input: zero where r % 4 == 1 (when there are several rows), else normal values
// at a scale that changes from row to row (so the rows' scales differ), all bf16-representable.
std::vector<uint16_t> test_rows_bf16(std::mt19937& rng, int64_t rows, int64_t width, float base_scale) {
  std::vector<uint16_t> bits(static_cast<size_t>(rows * width));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const bool zero = rows > 1 && r % 4 == 1;
    const float scale = base_scale * std::ldexp(1.0f, static_cast<int>(r % 7) - 3);
    for (int64_t j = 0; j < width; ++j) bits[r * width + j] = float_to_bf16(zero ? 0.0f : normal(rng) * scale);
  }
  return bits;
}

class Fp8Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    FG_REQUIRE_GPU();
    FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    sm_count_ = cuda::current_device_sm_count();
    streamed_ = std::make_unique<cuda::StreamedLinear>(sm_count_);
  }
  void TearDown() override {
    streamed_.reset();
    if (stream_ != nullptr) FG_CUDA_CHECK(cudaStreamDestroy(stream_));
  }
  cudaStream_t stream_ = nullptr;
  int sm_count_ = 0;
  std::unique_ptr<cuda::StreamedLinear> streamed_;
  std::mt19937 rng_{20261206};
};

// The static scales the quantizer tests sweep: none (a scale per row from its max), one small
// enough that most values saturate at ±448, and one that is no power of two (the division rounds).
const float kStaticScales[] = {0.0f, 1e-3f, 0.0123f};

// Widths past 16384 (1024 chunks of 16) give a thread more than one chunk: 28672, the 70B's
// intermediate size, and 16400 (one chunk past).
TEST_F(Fp8Kernels, QuantizeRowsMatchesHostBitwise) {
  for (const int64_t width : {16, 48, 4096, 14336, 16400, 28672})
    for (const int64_t rows : {1, 3, 17})
      for (const float static_scale : kStaticScales) {
        const std::vector<uint16_t> bits = test_rows_bf16(rng_, rows, width, 1.0f);
        const DeviceBuffer x = device_bf16(bits, {rows, width});
        const DeviceRows out = poisoned_rows(rows, width);
        cuda::launch_quantize_fp8_rows(bf16_ptr(x), static_scale, out.view(), rows, width, stream_);
        FG_CUDA_CHECK(cudaGetLastError());
        const HostRows want = quantize_rows_host(gpu_test::bf16_bits_to_float(bits), rows, width, static_scale);
        expect_rows_equal(out, want, width,
                          "rows " + std::to_string(rows) + " x " + std::to_string(width) + ", static scale " +
                              std::to_string(static_scale));
      }
}

// Every finite bf16 bit pattern, 16 to a row: the rounding to nearest even at every tie, the e4m3
// subnormals and the saturation, as the host has them. (Infinities and NaNs, zeroed here, have no
// meaningful scale: the row maxima of the two sides may treat a NaN differently.)
TEST_F(Fp8Kernels, QuantizeRowsOfEveryBf16ValueMatchesHostBitwise) {
  constexpr int64_t kWidth = 16, kRows = 65536 / kWidth;
  std::vector<uint16_t> bits(65536);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = (i & 0x7f80u) == 0x7f80u ? 0 : static_cast<uint16_t>(i);
  const DeviceBuffer x = device_bf16(bits, {kRows, kWidth});
  for (const float static_scale : {0.0f, 1.0f, 0.75f, 3e-5f}) {
    const DeviceRows out = poisoned_rows(kRows, kWidth);
    cuda::launch_quantize_fp8_rows(bf16_ptr(x), static_scale, out.view(), kRows, kWidth, stream_);
    FG_CUDA_CHECK(cudaGetLastError());
    const HostRows want = quantize_rows_host(gpu_test::bf16_bits_to_float(bits), kRows, kWidth, static_scale);
    expect_rows_equal(out, want, kWidth, "every bf16, static scale " + std::to_string(static_scale));
  }
}

TEST_F(Fp8Kernels, QuantizeRowOfZerosHasScaleOne) {
  const std::vector<uint16_t> bits(48, 0);
  const DeviceBuffer x = device_bf16(bits, {1, 48});
  const DeviceRows out = poisoned_rows(1, 48);
  cuda::launch_quantize_fp8_rows(bf16_ptr(x), 0.0f, out.view(), 1, 48, stream_);
  FG_CUDA_CHECK(cudaGetLastError());
  expect_rows_equal(out, HostRows{std::vector<uint8_t>(48, 0), {1.0f}}, 48, "a row of zeros");
}

TEST_F(Fp8Kernels, RmsNormQuantizeIsTheQuantizedBf16Norm) {
  constexpr float kEps = 1e-6f;
  for (const int64_t hidden : {16, 48, 4096, 14336})
    for (const int64_t rows : {1, 3, 17})
      for (const float static_scale : kStaticScales) {
        const std::vector<uint16_t> x_bits = test_rows_bf16(rng_, rows, hidden, 2.0f);
        std::vector<uint16_t> w_bits(static_cast<size_t>(hidden));
        std::normal_distribution<float> normal(1.0f, 0.2f);
        for (auto& b : w_bits) b = float_to_bf16(normal(rng_));
        const DeviceBuffer x = device_bf16(x_bits, {rows, hidden});
        const DeviceBuffer w = device_bf16(w_bits, {hidden});
        DeviceBuffer normed = gpu_test::device_alloc(DType::kBF16, {rows, hidden});
        gpu_test::poison(normed.tensor);
        const DeviceRows out = poisoned_rows(rows, hidden);
        cuda::launch_rms_norm(bf16_ptr(x), bf16_ptr(w), kEps, static_cast<__nv_bfloat16*>(normed.tensor.data), rows,
                              hidden, stream_);
        FG_CUDA_CHECK(cudaGetLastError());
        cuda::launch_rms_norm_quantize_fp8(bf16_ptr(x), bf16_ptr(w), kEps, static_scale, out.view(), rows, hidden,
                                           stream_);
        FG_CUDA_CHECK(cudaGetLastError());
        const std::vector<float> normed_values =
            gpu_test::bf16_bits_to_float(gpu_test::download<uint16_t>(normed.tensor));
        const HostRows want = quantize_rows_host(normed_values, rows, hidden, static_scale);
        expect_rows_equal(out, want, hidden,
                          "norm rows " + std::to_string(rows) + " x " + std::to_string(hidden) + ", static scale " +
                              std::to_string(static_scale));
      }
}

TEST_F(Fp8Kernels, SiluMulQuantizeIsTheQuantizedBf16SiluMul) {
  for (const int64_t width : {16, 48, 4096, 14336, 28672})  // 28672: the 70B's, two chunks a thread
    for (const int64_t rows : {1, 3, 17})
      for (const float static_scale : kStaticScales) {
        // One gate/up matmul output [rows, 2 * width]: gate the first half of each row, up the second.
        const std::vector<uint16_t> gate_up = test_rows_bf16(rng_, rows, 2 * width, 2.0f);
        const DeviceBuffer in = device_bf16(gate_up, {rows, 2 * width});
        const __nv_bfloat16* gate = bf16_ptr(in);
        const __nv_bfloat16* up = gate + width;
        DeviceBuffer product = gpu_test::device_alloc(DType::kBF16, {rows, width});
        gpu_test::poison(product.tensor);
        const DeviceRows out = poisoned_rows(rows, width);
        cuda::launch_silu_mul_rows(gate, up, static_cast<__nv_bfloat16*>(product.tensor.data), rows, width, 2 * width,
                                   stream_);
        FG_CUDA_CHECK(cudaGetLastError());
        cuda::launch_silu_mul_quantize_fp8(gate, up, 2 * width, static_scale, out.view(), rows, width, stream_);
        FG_CUDA_CHECK(cudaGetLastError());
        const std::vector<float> values = gpu_test::bf16_bits_to_float(gpu_test::download<uint16_t>(product.tensor));
        const HostRows want = quantize_rows_host(values, rows, width, static_scale);
        expect_rows_equal(out, want, width,
                          "silu rows " + std::to_string(rows) + " x " + std::to_string(width) + ", static scale " +
                              std::to_string(static_scale));
      }
}

TEST_F(Fp8Kernels, QuantizeWeightMatchesHostBitwise) {
  struct Shape {
    int64_t out_features, in;
  };
  for (const Shape s : {Shape{24, 16}, Shape{40, 48}, Shape{3, 28672}, Shape{17, 4096}, Shape{72, 14336}}) {
    const std::vector<uint16_t> bits = test_rows_bf16(rng_, s.out_features, s.in, 0.05f);
    const DeviceBuffer w = device_bf16(bits, {s.out_features, s.in});
    const DeviceRows out = poisoned_rows(s.out_features, s.in);
    cuda::launch_quantize_weight_fp8(bf16_ptr(w), out.view().values, out.view().scales, s.out_features, s.in, stream_);
    FG_CUDA_CHECK(cudaGetLastError());
    const HostRows want = quantize_rows_host(gpu_test::bf16_bits_to_float(bits), s.out_features, s.in, 0.0f);
    expect_rows_equal(out, want, s.in,
                      "weight " + std::to_string(s.out_features) + " x " + std::to_string(s.in));
  }
}

// ---- The decode linear ----

// Which decode kernel runs: the direct one (launch_fp8_small_n_linear), or the streamed one
// (StreamedLinear::run_fp8) with k in `slices` slices and `blocks_per_sm` blocks per SM (0: its
// own rule for either).
struct Fp8Kernel {
  bool streamed = false;
  int slices = 0, blocks_per_sm = 0;
  std::string name() const {
    if (!streamed) return "direct";
    return "streamed (slices " + (slices ? std::to_string(slices) : std::string("auto")) + ", blocks/SM " +
           (blocks_per_sm ? std::to_string(blocks_per_sm) : std::string("auto")) + ")";
  }
};

// The kernels a shape is run through: both at their own rules, and where k has 3 chunks of the
// streamed kernel's box or more, the streamed one forced into 2 and 3 slices over 1 and 2 blocks
// per SM (the slices meet in its workspace; the grid moves no sum).
std::vector<Fp8Kernel> kernels_for(int64_t out_features, int64_t in, int sm_count) {
  std::vector<Fp8Kernel> kernels = {{false}, {true}};
  const int64_t tiles = (out_features + cuda::kStreamedBoxRows - 1) / cuda::kStreamedBoxRows;
  if (in > 2 * cuda::kStreamedBoxK && 3 * tiles <= cuda::streamed_full_pass_units(sm_count))
    kernels.insert(kernels.end(), {{true, 2, 1}, {true, 3, 2}});
  return kernels;
}

// Where a launch runs: the fixture's streamed linear (its maps and slice workspace), SMs, stream.
struct LaunchContext {
  cuda::StreamedLinear& streamed;
  int sm_count;
  cudaStream_t stream;
};

void run_linear(const LaunchContext& at, const Fp8Kernel& kernel, const LinearCase& c, const uint8_t* x,
                const float* x_scales, bool with_bias, const LinearOutputs& out, int64_t n) {
  const auto* w = static_cast<const uint8_t*>(c.dw.tensor.data);
  const auto* w_scales = static_cast<const float*>(c.dw_scales.tensor.data);
  const __nv_bfloat16* bias = with_bias ? bf16_ptr(c.dbias) : nullptr;
  if (kernel.streamed)
    at.streamed.run_fp8(x, x_scales, w, w_scales, bias, out, n, c.in, c.out_features, at.stream, kernel.slices,
                        kernel.blocks_per_sm);
  else
    cuda::launch_fp8_small_n_linear(x, x_scales, w, w_scales, bias, out, n, c.in, c.out_features, at.sm_count,
                                    at.stream);
  FG_CUDA_CHECK(cudaGetLastError());
}

// The fixtures' tiny odd shapes, a leftover partial k-step (in % 64 != 0), blocks of several warps
// with leftover steps (in = 4176: 65 whole steps and one of 16; the streamed kernel's last chunk
// of k 80 wide) and a last, partial block of rows; for the streamed kernel also many tiles per
// block with a partial last tile (4100 rows: full passes, then a short one).
const LinearShape kLinearShapes[] = {{24, 16},  {40, 48},    {72, 64},    {96, 80},   {24, 144},
                                     {40, 144}, {136, 4176}, {256, 4096}, {4100, 1040}};
const int64_t kTokenCounts[] = {1, 2, 7, 8, 9, 16};

TEST_F(Fp8Kernels, SmallNLinearMatchesFp64Reference) {
  const LaunchContext at{*streamed_, sm_count_, stream_};
  for (const LinearShape s : kLinearShapes) {
    const LinearCase c = make_linear_case(rng_, s.out_features, s.in);
    for (const Fp8Kernel& kernel : kernels_for(s.out_features, s.in, sm_count_))
      for (const int64_t n : kTokenCounts)
        for (const bool with_bias : {false, true}) {
          // Token rows exactly [n, in], so that reading a row past n would leave the allocation.
          DeviceBuffer x = gpu_test::device_alloc(DType::kF8E4M3, {n, s.in});
          FG_CUDA_CHECK(
              cudaMemcpy(x.tensor.data, c.dx.tensor.data, static_cast<size_t>(n * s.in), cudaMemcpyDeviceToDevice));
          DeviceBuffer out = gpu_test::device_alloc(DType::kBF16, {16, s.out_features});
          gpu_test::poison(out.tensor);
          run_linear(at, kernel, c, static_cast<const uint8_t*>(x.tensor.data),
                     static_cast<const float*>(c.dx_scales.tensor.data), with_bias,
                     LinearOutputs::whole(out.tensor.data, s.out_features), n);
          const std::vector<uint16_t> got = gpu_test::download<uint16_t>(out.tensor);
          const std::string what = kernel.name() + ", " + std::to_string(s.out_features) + " x " +
                                   std::to_string(s.in) + ", n " + std::to_string(n) + (with_bias ? ", bias" : "");
          OutputCheck check;
          int64_t stray = 0;
          for (int64_t i = 0; i < 16; ++i)
            for (int64_t j = 0; j < s.out_features; ++j) {
              const uint16_t bits = got[static_cast<size_t>(i * s.out_features + j)];
              if (i < n)
                check.check(c, with_bias, i, j, bits, NAN, what);
              else
                stray += bits != kPoisonBf16;
            }
          EXPECT_EQ(check.failures, 0) << what;
          EXPECT_EQ(stray, 0) << what << ": outputs written for token rows >= n";
        }
  }
}

// Three parts (as a q/k/v or gate/up span), at even columns (pair stores) and odd ones (single
// stores); stored, and added to what the outputs hold (the residual stream).
TEST_F(Fp8Kernels, SmallNLinearSplitOutputsAndAddToOutput) {
  struct SplitCase {
    LinearShape shape;
    int64_t begin[4];
  };
  const SplitCase cases[] = {{{72, 64}, {0, 24, 40, 72}},
                             {{96, 144}, {0, 23, 41, 96}},
                             {{136, 4176}, {0, 64, 96, 136}},
                             {{40, 48}, {0, 7, 8, 40}}};
  const LaunchContext at{*streamed_, sm_count_, stream_};
  for (const SplitCase& sc : cases) {
    const LinearCase c = make_linear_case(rng_, sc.shape.out_features, sc.shape.in);
    for (const Fp8Kernel& kernel : kernels_for(sc.shape.out_features, sc.shape.in, sm_count_))
      for (const int64_t n : {1, 9, 16})
        for (const bool add : {false, true}) {
          LinearOutputs out{};
          out.parts = 3;
          out.add_to_output = add;
          std::vector<DeviceBuffer> parts;
          std::vector<std::vector<uint16_t>> held(3);
          for (int p = 0; p < 4; ++p) out.begin[p] = sc.begin[p];
          for (int p = 0; p < 3; ++p) {
            const int64_t width = sc.begin[p + 1] - sc.begin[p];
            parts.push_back(gpu_test::device_alloc(DType::kBF16, {16, width}));
            if (add) {
              held[p].resize(static_cast<size_t>(16 * width));
              std::normal_distribution<float> normal(0.0f, 1.0f);
              for (auto& h : held[p]) h = float_to_bf16(normal(rng_));
              gpu_test::upload(parts[p].tensor, held[p]);
            } else {
              gpu_test::poison(parts[p].tensor);
            }
            out.data[p] = parts[p].tensor.data;
          }
          run_linear(at, kernel, c, static_cast<const uint8_t*>(c.dx.tensor.data),
                     static_cast<const float*>(c.dx_scales.tensor.data), true, out, n);
          const std::string what = kernel.name() + ", " + std::to_string(sc.shape.out_features) + " x " +
                                   std::to_string(sc.shape.in) + " in 3 parts, n " + std::to_string(n) +
                                   (add ? ", added" : "");
          OutputCheck check;
          int64_t stray = 0;
          for (int p = 0; p < 3; ++p) {
            const int64_t width = sc.begin[p + 1] - sc.begin[p];
            const std::vector<uint16_t> got = gpu_test::download<uint16_t>(parts[p].tensor);
            for (int64_t i = 0; i < 16; ++i)
              for (int64_t j = 0; j < width; ++j) {
                const size_t o = static_cast<size_t>(i * width + j);
                const uint16_t untouched = add ? held[p][o] : kPoisonBf16;
                if (i >= n) {
                  stray += got[o] != untouched;
                  continue;
                }
                check.check(c, true, i, sc.begin[p] + j, got[o], add ? bf16_to_float(held[p][o]) : NAN, what);
              }
          }
          EXPECT_EQ(check.failures, 0) << what;
          EXPECT_EQ(stray, 0) << what << ": outputs written for token rows >= n";
        }
  }
}

// Under PDL the linear starts while the kernel before it still writes its token rows: launched just
// after a copy that lets it start at once and lands the rows (and their scales) 100 us later, it
// must still compute from the copied rows, not from what the buffers held before (e4m3 NaN, which
// turns every output it reaches into NaN). The model's shapes: hidden 512 (two warps per block)
// and the 8B's o_proj input of 4096 (sixteen); both tile counts (n <= 8 and n > 8).
TEST_F(Fp8Kernels, SmallNLinearReadsTokenRowsAfterThePdlWait) {
  const LaunchContext at{*streamed_, sm_count_, stream_};
  for (const LinearShape s : {LinearShape{768, 512}, LinearShape{256, 4096}}) {
    const LinearCase c = make_linear_case(rng_, s.out_features, s.in);
    for (const Fp8Kernel& kernel : kernels_for(s.out_features, s.in, sm_count_))
      for (const int64_t n : {int64_t{8}, int64_t{9}, int64_t{16}}) {
        DeviceBuffer x = gpu_test::device_alloc(DType::kF8E4M3, {16, s.in});
        DeviceBuffer x_scales = gpu_test::device_alloc(DType::kF32, {16});
        gpu_test::upload(x.tensor, std::vector<uint8_t>(static_cast<size_t>(16 * s.in), kPoisonByte));
        gpu_test::upload(x_scales.tensor, std::vector<float>(16, NAN));
        DeviceBuffer out = gpu_test::device_alloc(DType::kBF16, {16, s.out_features});
        gpu_test::poison(out.tensor);
        FG_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads ran on the legacy stream
        constexpr int64_t kDelayNs = 100'000;
        gpu_test::launch_late_copy(x.tensor.data, c.dx.tensor.data, 16 * s.in, kDelayNs, stream_);
        gpu_test::launch_late_copy(x_scales.tensor.data, c.dx_scales.tensor.data, 16 * sizeof(float), 0, stream_);
        run_linear(at, kernel, c, static_cast<const uint8_t*>(x.tensor.data),
                   static_cast<const float*>(x_scales.tensor.data), true,
                   LinearOutputs::whole(out.tensor.data, s.out_features), n);
        FG_CUDA_CHECK(cudaStreamSynchronize(stream_));
        const std::vector<uint16_t> got = gpu_test::download<uint16_t>(out.tensor);
        const std::string what = kernel.name() + ", " + std::to_string(s.out_features) + " x " + std::to_string(s.in) +
                                 ", n " + std::to_string(n) + ", rows written late";
        OutputCheck check;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < s.out_features; ++j)
            check.check(c, true, i, j, got[static_cast<size_t>(i * s.out_features + j)], NAN, what);
        EXPECT_EQ(check.failures, 0) << what;
      }
  }
}

// DESIGN.md rule 7: row i's bits are the same whatever the number of token rows in the launch.
// The streamed kernel's rows are also the same over either grid (1 or 2 blocks per SM at a slice
// count): its rule may pick the grid by n.
TEST_F(Fp8Kernels, SmallNLinearRowsAreBitIdenticalForEveryN) {
  const LaunchContext at{*streamed_, sm_count_, stream_};
  for (const LinearShape s :
       {LinearShape{136, 4176}, LinearShape{40, 144}, LinearShape{256, 4096}, LinearShape{4100, 1040}}) {
    const LinearCase c = make_linear_case(rng_, s.out_features, s.in);
    for (const Fp8Kernel& kernel : kernels_for(s.out_features, s.in, sm_count_)) {
      std::vector<uint16_t> all_rows;  // the n = 16 launch (on the other grid, for a forced streamed one)
      for (int64_t n = 16; n >= 1; --n) {
        DeviceBuffer out = gpu_test::device_alloc(DType::kBF16, {16, s.out_features});
        gpu_test::poison(out.tensor);
        Fp8Kernel run = kernel;
        if (kernel.blocks_per_sm != 0 && n == 16) run.blocks_per_sm = 3 - kernel.blocks_per_sm;
        run_linear(at, run, c, static_cast<const uint8_t*>(c.dx.tensor.data),
                   static_cast<const float*>(c.dx_scales.tensor.data), true,
                   LinearOutputs::whole(out.tensor.data, s.out_features), n);
        const std::vector<uint16_t> got = gpu_test::download<uint16_t>(out.tensor);
        if (n == 16) all_rows = got;
        int64_t differ = 0, stray = 0;
        for (size_t o = 0; o < got.size(); ++o) {
          if (static_cast<int64_t>(o) < n * s.out_features)
            differ += got[o] != all_rows[o];
          else
            stray += got[o] != kPoisonBf16;
        }
        EXPECT_EQ(differ, 0) << kernel.name() << ", " << s.out_features << " x " << s.in << ": n " << n
                             << " differs from n 16";
        EXPECT_EQ(stray, 0) << kernel.name() << ", " << s.out_features << " x " << s.in << ": n " << n
                            << " wrote rows >= n";
      }
    }
  }
}

// The gated streamed FP8 kernel (StreamedLinear::run_gated_fp8): silu(gate) * up with the bits of
// the span's FP8 linear (run_fp8, stored as BF16) then the SiLU-and-multiply kernel, at every row
// count of both tile layouts, over the 1B's gate/up span (8192 x 2048), a span of 8192 rows at
// k 512 and one whose last chunk of k is partial (1040). Shapes the gated kernel does not take on
// this GPU (fewer rows than its streaming rule asks of its SM count) are skipped by name.
TEST_F(Fp8Kernels, StreamedGatedLinearIsTheSpanThenSiluMul) {
  struct GatedShape {
    int64_t intermediate, in;
  };
  int ran = 0;
  for (const GatedShape s : {GatedShape{4096, 512}, GatedShape{4096, 1040}, GatedShape{8192, 2048}}) {
    if (!cuda::gated_linear_applies(s.intermediate, s.in, sm_count_, 1)) {
      std::printf("StreamedGatedLinearIsTheSpanThenSiluMul: %lld x %lld does not stream gated on %d SMs\n",
                  static_cast<long long>(2 * s.intermediate), static_cast<long long>(s.in), sm_count_);
      continue;
    }
    ++ran;
    const int64_t rows = 2 * s.intermediate;
    DeviceBuffer w = gpu_test::device_alloc(DType::kF8E4M3, {rows, s.in});
    gpu_test::upload(w.tensor, random_e4m3(rng_, static_cast<size_t>(rows * s.in)));
    DeviceBuffer w_scales = gpu_test::device_alloc(DType::kF32, {rows});
    gpu_test::upload(w_scales.tensor, random_scales(rng_, static_cast<size_t>(rows), 1e-3f, 1e-2f));
    DeviceBuffer x = gpu_test::device_alloc(DType::kF8E4M3, {16, s.in});
    gpu_test::upload(x.tensor, random_e4m3(rng_, static_cast<size_t>(16 * s.in)));
    DeviceBuffer x_scales = gpu_test::device_alloc(DType::kF32, {16});
    gpu_test::upload(x_scales.tensor, random_scales(rng_, 16, 1e-3f, 4e-2f));
    FG_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads ran on the legacy stream
    const auto* xv = static_cast<const uint8_t*>(x.tensor.data);
    const auto* xs = static_cast<const float*>(x_scales.tensor.data);
    const auto* wv = static_cast<const uint8_t*>(w.tensor.data);
    const auto* ws = static_cast<const float*>(w_scales.tensor.data);
    for (const int64_t n : {1, 3, 8, 9, 16}) {
      DeviceBuffer span = gpu_test::device_alloc(DType::kBF16, {n, rows});
      DeviceBuffer want = gpu_test::device_alloc(DType::kBF16, {n, s.intermediate});
      DeviceBuffer got = gpu_test::device_alloc(DType::kBF16, {n, s.intermediate});
      gpu_test::poison(span.tensor);
      gpu_test::poison(want.tensor);
      gpu_test::poison(got.tensor);
      FG_CUDA_CHECK(cudaDeviceSynchronize());
      streamed_->run_fp8(xv, xs, wv, ws, nullptr, LinearOutputs::whole(span.tensor.data, rows), n, s.in, rows, stream_);
      FG_CUDA_CHECK(cudaGetLastError());
      const __nv_bfloat16* gate = bf16_ptr(span);
      cuda::launch_silu_mul_rows(gate, gate + s.intermediate, static_cast<__nv_bfloat16*>(want.tensor.data), n,
                                 s.intermediate, rows, stream_);
      FG_CUDA_CHECK(cudaGetLastError());
      streamed_->run_gated_fp8(xv, xs, wv, ws, static_cast<__nv_bfloat16*>(got.tensor.data), n, s.in, s.intermediate,
                               stream_);
      FG_CUDA_CHECK(cudaGetLastError());
      FG_CUDA_CHECK(cudaStreamSynchronize(stream_));
      const std::vector<uint16_t> a = gpu_test::download<uint16_t>(want.tensor);
      const std::vector<uint16_t> b = gpu_test::download<uint16_t>(got.tensor);
      int64_t differ = 0, unwritten = 0;
      for (size_t o = 0; o < a.size(); ++o) {
        differ += a[o] != b[o];
        unwritten += b[o] == kPoisonBf16;
      }
      const std::string what = std::to_string(rows) + " x " + std::to_string(s.in) + ", n " + std::to_string(n);
      EXPECT_EQ(differ, 0) << what << ": the gated kernel differs from the span's linear then silu_mul";
      EXPECT_EQ(unwritten, 0) << what << ": outputs left unwritten";
    }
  }
  if (ran == 0) GTEST_SKIP() << "no shape streams gated on " << sm_count_ << " SMs";
}


}  // namespace
}  // namespace fg
