// attention/cuda/attention_factory.cpp — the one place a GPU attention backend is chosen by name
// (the engine's --attention, tests and `fullgraph bench attention`). The backends live in
// flash_attention.cpp, split_kv_attention.cpp, auto_attention.cpp and reference_attention.cpp.
#include "attention/cuda/attention_backend.h"
#include "attention/cuda/reference_attention.h"
#include "core/error.h"

namespace fg {

std::unique_ptr<AttentionBackend> make_attention_backend(const std::string& name, const AttentionLimits& limits) {
  if (name == "flash") return make_flash_attention(limits);
  if (name == "split_kv") return make_split_kv_attention(limits);
  if (name == "reference") return make_reference_attention(limits);  // simple fp32 GPU oracle, slow
  if (name == "auto") {
    // flash and split_kv where they serve the model (their constructors refuse what their kernels
    // are not built for, e.g. the head dims of the tiny fixture models), else the reference.
    try {
      return make_auto_attention(limits);
    } catch (const Error&) {
      return make_reference_attention(limits);
    }
  }
  fail("unknown attention backend '{}' (known: auto, flash, split_kv, reference)", name);
}

}  // namespace fg
