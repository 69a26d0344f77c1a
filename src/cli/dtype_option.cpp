// cli/dtype_option.cpp — see dtype_option.h.
#include "cli/dtype_option.h"

#include <fmt/format.h>

#include "core/error.h"

namespace fg::cli {

namespace {

// vLLM's spellings to one name each: "half" is float16, "float" is float32.
std::string canonical(const std::string& dtype) {
  if (dtype == "half") return "float16";
  if (dtype == "float") return "float32";
  FG_CHECK(dtype == "auto" || dtype == "bfloat16" || dtype == "float16" || dtype == "float32",
           "unknown --dtype '{}' (expected {})", dtype, dtype_choices());
  return dtype;
}

}  // namespace

const char* dtype_choices() { return "auto, bfloat16, float16 (half) or float32 (float)"; }

std::string check_dtype_option(const std::string& dtype, Device device) {
  const std::string name = canonical(dtype);
  if (device == Device::kCuda) {
    FG_CHECK(name == "auto" || name == "bfloat16",
             "--dtype {}: the CUDA backend computes in bfloat16 only (checkpoints in float16 or float32 are "
             "converted to bfloat16 at load); use --dtype auto or bfloat16",
             dtype);
    return "";
  }
  if (name == "auto" || name == "float32") return "";
  return fmt::format(
      "--dtype {}: the CPU backend computes in float32 (the reference): weights are kept as stored in the "
      "checkpoint and widened exactly, activations and the KV cache are float32; results are float32's, not {}'s",
      dtype, name);
}

}  // namespace fg::cli
