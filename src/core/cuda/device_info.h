// core/cuda/device_info.h — what CUDA devices this machine has, for `fullgraph info` and for
// GPU tests that must skip cleanly where there is none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fg::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  uint64_t total_memory_bytes = 0;
};

// Empty when there is no device or no driver (never an error: absence is a normal answer).
std::vector<DeviceInfo> list_devices();

// The multiprocessors of the calling thread's current device (raises fg::Error on a CUDA error):
// for launchers that size their grids by the SM count.
int current_device_sm_count();

}  // namespace fg::cuda
