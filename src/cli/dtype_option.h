// cli/dtype_option.h — vLLM's --dtype, against what each backend computes in. The CUDA backend
// runs bf16 (weights of other dtypes are converted to bf16 at load); the CPU backend is the fp32
// reference (weights are read as stored and widened exactly, so it computes what a float32 model
// with those weights computes). A dtype a backend cannot run is refused on CUDA, where a user
// would otherwise get bf16 numbers believing they asked for something else, and noted on the CPU,
// whose float32 results are the reference every dtype is judged against.
#pragma once

#include <string>

#include "core/tensor.h"

namespace fg::cli {

// The values --dtype accepts: vLLM's (auto, bfloat16, float16, half, float32, float).
const char* dtype_choices();

// Checks `dtype` against the backend on `device`: throws fg::Error for one it cannot honour;
// returns a note for the log where it runs something other than what was asked (else "").
std::string check_dtype_option(const std::string& dtype, Device device);

}  // namespace fg::cli
