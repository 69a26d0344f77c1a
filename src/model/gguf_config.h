// model/gguf_config.h — a GGUF file's metadata (and tensor list) → fg::ModelConfig, or a refusal.
//
// The GGUF counterpart of config.h: general.architecture `llama`, `qwen2` or `qwen3`, their
// `ARCH.*` hyperparameter keys, special token ids from `tokenizer.ggml.*`. Facts that llama.cpp's
// converter leaves out of the metadata are read from the tensors, as llama.cpp itself does: the
// vocabulary size (token_embd's rows), tied embeddings (no output.weight), q/k/v biases and q/k
// norms (their tensors present). Anything that would change the arithmetic and that fullgraph
// does not implement (mixtures of experts, partial rotary, RoPE scaling) is refused by its key.
#pragma once

#include "model/config.h"

namespace fg {

class GgufFile;

ModelConfig gguf_model_config(const GgufFile& file);

}  // namespace fg
