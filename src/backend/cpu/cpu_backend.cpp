// backend/cpu/cpu_backend.cpp — memory, copies and the row-wise ops of the CPU backend
// (embedding, norms, SiLU-and-multiply, row gather).
#include "backend/cpu/cpu_backend.h"

#include <cstring>
#include <vector>

#include "backend/cpu/cpu_math.h"
#include "core/host_buffer.h"

namespace fg {

using cpu::load_floats;
using cpu::require_f32;
using cpu::require_i32;

Allocation CpuBackend::allocate(DType dtype, std::initializer_list<int64_t> dims) {
  Tensor shape(nullptr, dtype, dims, Device::kHost);
  auto buffer = std::make_shared<HostBuffer>(shape.nbytes());
  Allocation out;
  out.tensor = shape;
  out.tensor.data = buffer->data();
  out.memory = buffer;
  return out;
}

void CpuBackend::copy_from_host(const Tensor& dst, const void* src) {
  if (dst.nbytes()) std::memcpy(dst.data, src, dst.nbytes());
}

void CpuBackend::copy_to_host(void* dst, const Tensor& src) {
  if (src.nbytes()) std::memcpy(dst, src.data, src.nbytes());
}

Allocation CpuBackend::allocate_staging(size_t bytes) { return allocate(DType::kI32, {static_cast<int64_t>((bytes + 3) / 4)}); }

namespace {
class CpuGraph final : public Graph {
 public:
  explicit CpuGraph(std::vector<std::function<void()>> ops) : ops_(std::move(ops)) {}
  void replay() override {
    for (const auto& op : ops_) op();
  }

 private:
  std::vector<std::function<void()>> ops_;
};
}  // namespace

void CpuBackend::dispatch(std::function<void()> op) {
  if (recording_) {
    recording_->push_back(std::move(op));
  } else {
    op();
  }
}

void CpuBackend::begin_capture() {
  FG_CHECK(recording_ == nullptr, "cpu backend: a capture is already in progress");
  capture_ = std::make_unique<std::vector<std::function<void()>>>();
  recording_ = capture_.get();
}

std::unique_ptr<Graph> CpuBackend::end_capture() {
  FG_CHECK(recording_ != nullptr, "cpu backend: end_capture without begin_capture");
  recording_ = nullptr;
  auto graph = std::make_unique<CpuGraph>(std::move(*capture_));
  capture_.reset();
  return graph;
}

void CpuBackend::embedding_now(const Tensor& ids, const Tensor& table, const Tensor& out) {
  require_i32(ids, "embedding ids");
  require_f32(out, "embedding output");
  const int64_t n = ids.dim(0), vocab = table.dim(0), hidden = table.dim(1);
  FG_ASSERT(out.same_shape({n, hidden}));
  const int32_t* id = ids.as<const int32_t>();
  for (int64_t i = 0; i < n; ++i)
    FG_CHECK(id[i] >= 0 && id[i] < vocab, "embedding: token id {} at row {} is outside the vocabulary of {}",
             id[i], i, vocab);
  pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) load_floats(table, id[i] * hidden, hidden, out.as<float>() + i * hidden);
  });
}

namespace {
// out_row = x_row * inv_rms * weight, with the weight already in fp32.
void scale_row(const float* x, const float* weight, int64_t hidden, float eps, float* out) {
  float inv = cpu::inverse_rms(x, hidden, eps);
  for (int64_t j = 0; j < hidden; ++j) out[j] = weight[j] * (x[j] * inv);
}
}  // namespace

void CpuBackend::rms_norm_now(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  require_f32(x, "rms_norm input");
  require_f32(out, "rms_norm output");
  const int64_t n = x.dim(0), hidden = x.dim(1);
  FG_ASSERT(weight.numel() == hidden && out.same_shape({n, hidden}));
  std::vector<float> w(hidden);
  load_floats(weight, 0, hidden, w.data());
  pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      scale_row(x.as<const float>() + i * hidden, w.data(), hidden, eps, out.as<float>() + i * hidden);
  });
}

void CpuBackend::add_rms_norm_now(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                              const Tensor& out) {
  require_f32(residual, "add_rms_norm residual");
  require_f32(x, "add_rms_norm input");
  require_f32(out, "add_rms_norm output");
  const int64_t n = x.dim(0), hidden = x.dim(1);
  FG_ASSERT(residual.same_shape({n, hidden}) && weight.numel() == hidden && out.same_shape({n, hidden}));
  std::vector<float> w(hidden);
  load_floats(weight, 0, hidden, w.data());
  pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* r = residual.as<float>() + i * hidden;
      const float* add = x.as<const float>() + i * hidden;
      for (int64_t j = 0; j < hidden; ++j) r[j] += add[j];
      scale_row(r, w.data(), hidden, eps, out.as<float>() + i * hidden);
    }
  });
}

void CpuBackend::add_now(const Tensor& residual, const Tensor& x) {
  require_f32(residual, "add residual");
  require_f32(x, "add input");
  FG_CHECK(x.rank == 2 && residual.same_shape({x.dim(0), x.dim(1)}), "add: residual {} and input {} differ",
           residual.shape_string(), x.shape_string());
  const int64_t count = x.numel();
  float* r = residual.as<float>();
  const float* a = x.as<const float>();
  for (int64_t i = 0; i < count; ++i) r[i] += a[i];
}

void CpuBackend::head_rms_norm_now(const Tensor& x, const Tensor& weight, float eps) {
  require_f32(x, "head_rms_norm input");
  const int64_t head_dim = weight.numel();
  const int64_t rows = x.numel() / head_dim;
  FG_ASSERT(rows * head_dim == x.numel());
  std::vector<float> w(head_dim);
  load_floats(weight, 0, head_dim, w.data());
  pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
    std::vector<float> tmp(head_dim);
    for (int64_t r = begin; r < end; ++r) {
      float* head = x.as<float>() + r * head_dim;
      scale_row(head, w.data(), head_dim, eps, tmp.data());
      std::memcpy(head, tmp.data(), head_dim * sizeof(float));
    }
  });
}

void CpuBackend::silu_mul_now(const Tensor& gate, const Tensor& up, const Tensor& out) {
  require_f32(gate, "silu_mul gate");
  require_f32(up, "silu_mul up");
  require_f32(out, "silu_mul output");
  FG_ASSERT(gate.numel() == up.numel() && gate.numel() == out.numel());
  const int64_t n = gate.dim(0), width = gate.row_numel();
  pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * width; i < end * width; ++i)
      out.as<float>()[i] = cpu::silu(gate.as<const float>()[i]) * up.as<const float>()[i];
  });
}

void CpuBackend::gather_rows_now(const Tensor& x, const Tensor& indices, const Tensor& out) {
  require_i32(indices, "gather_rows indices");
  FG_ASSERT(x.dtype == out.dtype);
  const int64_t n = x.dim(0), m = indices.dim(0);
  const size_t row_bytes = static_cast<size_t>(x.row_numel()) * dtype_size(x.dtype);
  FG_ASSERT(out.dim(0) == m && out.row_numel() == x.row_numel());
  for (int64_t i = 0; i < m; ++i) {
    int32_t src = indices.as<const int32_t>()[i];
    FG_CHECK(src >= 0 && src < n, "gather_rows: index {} at row {} is outside [0, {})", src, i, n);
    std::memcpy(static_cast<char*>(out.data) + i * row_bytes, static_cast<const char*>(x.data) + src * row_bytes,
                row_bytes);
  }
}

}  // namespace fg
