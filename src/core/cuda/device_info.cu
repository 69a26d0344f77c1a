// core/cuda/device_info.cu — device enumeration through the CUDA runtime.
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_info.h"

namespace fg::cuda {

std::vector<DeviceInfo> list_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();  // clear the sticky "no device" state
    return {};
  }
  FG_CUDA_CHECK(status);
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    FG_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    devices.push_back({i, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                       static_cast<uint64_t>(prop.totalGlobalMem)});
  }
  return devices;
}

int current_device_sm_count() {
  int device = 0, sms = 0;
  FG_CUDA_CHECK(cudaGetDevice(&device));
  FG_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace fg::cuda
