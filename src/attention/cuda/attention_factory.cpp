// attention/cuda/attention_factory.cpp — picks a GPU attention backend by name (the engine's
// attention choice and `fullgraph bench attention`). The backends live in flash_attention.cpp,
// split_kv_attention.cpp and reference_attention.cpp.
#include "attention/cuda/attention_backend.h"
#include "attention/cuda/reference_attention.h"
#include "core/error.h"

namespace fg {

std::unique_ptr<AttentionBackend> make_attention_backend(const std::string& name, const AttentionLimits& limits) {
  if (name == "flash") return make_flash_attention(limits);
  if (name == "split_kv") return make_split_kv_attention(limits);
  if (name == "auto") return make_auto_attention(limits);
  if (name == "reference") return make_reference_attention(limits);  // simple fp32 GPU oracle, slow
  fail("unknown attention backend '{}' (known: auto, flash, split_kv, reference)", name);
}

}  // namespace fg
