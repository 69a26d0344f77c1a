// model/gguf_weights.h — a GGUF file's tensors → ModelWeights: ggml's names mapped to ours, the
// converter's Q/K row permutation undone, every tensor dequantized at load time to the backend's
// weight dtype (Backend::weight_dtype of F32: F32 on the CPU, BF16 on CUDA).
//
// The checks are load_weights' (weights.h): every tensor the config implies present with exactly
// its shape, nothing unexpected; errors name the GGUF tensor, its Hugging Face name and the
// metadata keys behind the shape. Types dequantize handles are accepted (gguf_dequant.h); any
// other is refused by its ggml name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "backend/backend.h"
#include "model/config.h"
#include "model/weights.h"

namespace fg {

class GgufFile;

// What a load dequantized, for the log: tensors per ggml type, to which dtype, in how long.
struct GgufLoadReport {
  std::map<std::string, int> tensors_by_type;  // ggml type name -> tensors
  DType dtype = DType::kF32;
  double seconds = 0.0;

  // "Q4_1 ×210, F32 ×61, Q8_0 ×1 → F32 in 0.84 s".
  std::string describe() const;
};

// The GGUF (llama.cpp) name of the Hugging Face weight `hf_name`, as expected_weights names it:
// "model.layers.3.self_attn.q_proj.weight" → "blk.3.attn_q.weight".
std::string gguf_tensor_name(const std::string& hf_name);

// Undoes llama.cpp's convert_hf_to_gguf.py permutation of attn_q/attn_k rows (weights and biases)
// for the `llama` architecture, in place. `data` holds rows of `row_bytes` each, in groups of
// head_dim rows per head; the row that Hugging Face numbers h*D + i*D/2 + j (i in {0, 1}, j < D/2)
// sits at h*D + 2*j + i in the file.
void unpermute_rope_rows(std::span<std::byte> data, int64_t heads, size_t row_bytes);

ModelWeights load_gguf_weights(const ModelConfig& config, std::shared_ptr<const GgufFile> file, Backend& backend,
                               GgufLoadReport* report = nullptr);

}  // namespace fg
