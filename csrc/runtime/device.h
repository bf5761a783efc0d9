// OpenCL devices as Drawbridge numbers them (ocl:0..N-1), with their context and streams.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/opencl.h"

namespace drawbridge::runtime {

class DeviceMemory;

// Which family of kernel variants, launch shapes and memory placement a device gets: CPU devices
// walk chunks in vectorized loops and reduce dense runs per work-item; GPU-class devices take one
// work-item per element and local-memory trees. DRAWBRIDGE_DEVICE_CLASS=cpu|gpu overrides the
// choice made from the device type, so that PoCL can run (and test) the GPU paths.
enum class DeviceClass { cpu, gpu };

struct DeviceProperties {
  std::string name;
  std::string vendor;
  std::string driver_version;
  std::string platform_name;
  std::string platform_vendor;
  std::string opencl_version;
  std::string type;  // "gpu", "cpu", "accelerator"
  DeviceClass device_class = DeviceClass::gpu;
  uint64_t global_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  uint64_t local_mem_bytes = 0;
  uint32_t compute_units = 0;
  size_t max_work_group_size = 0;
  size_t max_parameter_bytes = 0;
  size_t base_address_align = 1;  // bytes; the alignment a sub-buffer's origin needs
  uint32_t native_float_vector_width = 1;  // floats per SIMD register (CPU devices: the vector unit)
  bool fp16 = false;
  bool fp64 = false;

  bool cpu_class() const { return device_class == DeviceClass::cpu; }

  // Elements of `element_bytes` bytes that fill one SIMD register (at least 1).
  size_t vector_elements(size_t element_bytes) const {
    const size_t bytes = size_t(native_float_vector_width) * sizeof(float);
    return bytes > element_bytes ? bytes / element_bytes : 1;
  }
};

// A stream is an in-order command queue. Index 0 is the device's default stream; the rest form
// the pool that torch.ocl.Stream() draws from. Queues are created on first use.
constexpr int kStreamsPerDevice = 32;

class Device {
 public:
  Device(int index, cl_platform_id platform, cl_device_id id);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int index() const { return index_; }
  cl_device_id id() const { return id_; }
  cl_context context() const { return context_; }
  const DeviceProperties& properties() const { return properties_; }
  DeviceMemory& memory() { return *memory_; }

  cl_command_queue queue(int stream_index);
  // The stream index of one of this device's queues, -1 for a queue of another device.
  int stream_index_of(cl_command_queue q) const;

  // A device-side assert: kernels set this int when they meet an index out of range (and skip
  // the element). take_error() reads and clears it, waiting for the work queued on q.
  cl_mem error_flag();
  int take_error(cl_command_queue q);
  // Blocks until every stream created so far on this device is idle.
  void synchronize();

 private:
  int index_;
  cl_device_id id_;
  cl_context context_ = nullptr;
  DeviceProperties properties_;
  std::unique_ptr<DeviceMemory> memory_;
  std::mutex queue_mutex_;
  std::array<std::atomic<cl_command_queue>, kStreamsPerDevice> queues_{};
  std::once_flag error_once_;
  cl_mem error_flag_ = nullptr;
};

// Number of usable devices. Never throws: with no OpenCL platform it is 0 and
// no_device_reason() says why.
int device_count();
Device& device(int index);  // throws Error when index is out of range
std::string no_device_reason();
bool devices_discovered();  // whether discovery has run (torch.ocl.is_initialized)

// Parses a DRAWBRIDGE_DEVICES-style selector ("pocl", "nvidia:0", "gpu,cpu:1").
// Exposed for tests; device discovery uses it with the environment variable.
struct DeviceCandidate {
  std::string platform_name, platform_vendor, device_name, device_vendor, type;
};
std::vector<size_t> select_devices(const std::vector<DeviceCandidate>& candidates,
                                   const std::string& selector);

}  // namespace drawbridge::runtime
