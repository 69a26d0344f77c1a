// runner/host_step.cpp — request chunks to step arrays, and their upload.
#include "runner/host_step.h"

#include "core/error.h"

namespace fg {

HostStep build_host_step(const std::vector<RequestChunk>& chunks, int64_t block_size, int64_t max_blocks_per_seq) {
  HostStep s;
  s.max_blocks_per_seq = max_blocks_per_seq;
  s.query_start_loc.push_back(0);
  s.block_table.assign(chunks.size() * static_cast<size_t>(max_blocks_per_seq), 0);
  for (size_t r = 0; r < chunks.size(); ++r) {
    const RequestChunk& c = chunks[r];
    const int64_t total = c.num_computed + static_cast<int64_t>(c.token_ids.size());
    const int64_t blocks_needed = (total + block_size - 1) / block_size;
    FG_CHECK(static_cast<int64_t>(c.block_ids.size()) >= blocks_needed,
             "request {} needs {} KV blocks for {} tokens but holds {}", r, blocks_needed, total, c.block_ids.size());
    FG_CHECK(static_cast<int64_t>(c.block_ids.size()) <= max_blocks_per_seq,
             "request {} holds {} KV blocks, more than the {} a block-table row has", r, c.block_ids.size(),
             max_blocks_per_seq);
    for (size_t b = 0; b < c.block_ids.size(); ++b) s.block_table[r * max_blocks_per_seq + b] = c.block_ids[b];
    for (size_t j = 0; j < c.token_ids.size(); ++j) {
      const int64_t position = c.num_computed + static_cast<int64_t>(j);
      const int64_t block = c.block_ids[position / block_size];
      if (c.all_logits || j + 1 == c.token_ids.size())
        s.logits_indices.push_back(static_cast<int32_t>(s.input_ids.size()));
      s.input_ids.push_back(c.token_ids[j]);
      s.positions.push_back(static_cast<int32_t>(position));
      s.slot_mapping.push_back(block * block_size + position % block_size);
    }
    s.query_start_loc.push_back(static_cast<int32_t>(s.input_ids.size()));
    s.seq_lens.push_back(static_cast<int32_t>(total));
  }
  return s;
}

namespace {
template <typename T>
Tensor upload(Backend& backend, DeviceStep& out, DType dtype, const std::vector<T>& values,
              std::initializer_list<int64_t> dims) {
  Allocation a = backend.allocate(dtype, dims);
  FG_ASSERT(a.tensor.nbytes() == values.size() * sizeof(T));
  backend.copy_from_host(a.tensor, values.data());
  out.memory.push_back(a.memory);
  return a.tensor;
}
}  // namespace

DeviceStep upload_step(Backend& backend, const HostStep& s) {
  DeviceStep d;
  const int64_t n = static_cast<int64_t>(s.input_ids.size());
  const int64_t reqs = static_cast<int64_t>(s.seq_lens.size());
  d.inputs.input_ids = upload(backend, d, DType::kI32, s.input_ids, {n});
  d.inputs.positions = upload(backend, d, DType::kI32, s.positions, {n});
  d.inputs.slot_mapping = upload(backend, d, DType::kI64, s.slot_mapping, {n});
  d.inputs.logits_indices =
      upload(backend, d, DType::kI32, s.logits_indices, {static_cast<int64_t>(s.logits_indices.size())});
  d.inputs.attention.query_start_loc = upload(backend, d, DType::kI32, s.query_start_loc, {reqs + 1});
  d.inputs.attention.seq_lens = upload(backend, d, DType::kI32, s.seq_lens, {reqs});
  d.inputs.attention.block_table = upload(backend, d, DType::kI32, s.block_table, {reqs, s.max_blocks_per_seq});
  return d;
}

}  // namespace fg
